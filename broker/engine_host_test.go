package broker

import (
	"context"
	"strings"
	"testing"
)

func TestCheckAddress(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "192.0.2.10": "192.0.2.10", "::1": "::1",
		"::ffff:127.0.0.1": "127.0.0.1", "2001:DB8::1": "2001:db8::1",
	} {
		if got, err := CheckAddress(in); err != nil || got != want {
			t.Errorf("CheckAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"localhost":      `"localhost" is not an IP address`,
		"":               `"" is not an IP address`,
		"127.0.0.1:5672": `"127.0.0.1:5672" is not an IP address`,
		"fe80::1%eth0":   `"fe80::1%eth0" is not an IP address`,
		"0.0.0.0":        `"0.0.0.0" cannot be dialled`,
		"::":             `"::" cannot be dialled`,
		"224.0.0.1":      `"224.0.0.1" cannot be dialled`,
	} {
		if _, err := CheckAddress(in); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("CheckAddress(%q): %v; want %q…", in, err, want)
		}
	}
}

func TestReachableOn(t *testing.T) {
	for _, tc := range []struct {
		bound, address string
		want           bool
	}{
		{"127.0.0.1", "", true}, {"", "", true}, {"0.0.0.0", "192.0.2.10", true}, {"::", "", true},
		{"192.0.2.10", "192.0.2.10", true}, {"127.0.0.1", "192.0.2.10", false}, {"192.0.2.10", "", false},
	} {
		if got := reachableOn(tc.bound, tc.address); got != tc.want {
			t.Errorf("reachableOn(%q, %q) = %v", tc.bound, tc.address, got)
		}
	}
}

// TestEngineHost: the engine is named as DOCKER_HOST spells it, password
// masked; the local socket when unset.
func TestEngineHost(t *testing.T) {
	for host, want := range map[string]string{
		"":                                   "unix:///var/run/docker.sock",
		"ssh://deploy@build-1:2222":          "ssh://deploy@build-1:2222",
		"tcp://alice:S3cret@192.0.2.10:2376": "tcp://alice:xxxxx@192.0.2.10:2376",
	} {
		t.Setenv("DOCKER_HOST", host)
		if got := EngineHost(); got != want {
			t.Errorf("DOCKER_HOST %q: EngineHost %q, want %q", host, got, want)
		}
	}
}

// TestDockerSSHURLs: an ssh:// DOCKER_HOST goes through the Docker CLI's
// connection helper, which refuses what ssh cannot take (a password, a
// query), naming the engine with its password masked; no ssh is started.
func TestDockerSSHURLs(t *testing.T) {
	for host, want := range map[string]string{
		"ssh://alice:S3cret@192.0.2.10": "DOCKER_HOST=ssh://alice:xxxxx@192.0.2.10: ssh host connection is not valid: invalid SSH URL: plain-text password is not supported",
		"ssh://alice@192.0.2.10?x=1":    `DOCKER_HOST=ssh://alice@192.0.2.10?x=1: ssh host connection is not valid: invalid SSH URL: query parameters are not allowed: "x=1"`,
	} {
		t.Setenv("DOCKER_HOST", host)
		if _, err := Docker(context.Background()); err == nil || err.Error() != want {
			t.Errorf("DOCKER_HOST %q: %v; want %q", host, err, want)
		}
	}
	t.Setenv("DOCKER_HOST", "ssh://alice@192.0.2.10:2222")
	opts, err := clientOpts()
	if err != nil || len(opts) != 5 {
		t.Fatalf("%d options, %v", len(opts), err)
	}
}
