package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/cli/cli/context/docker"
	"github.com/docker/cli/cli/context/store"
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
// masked; the local socket when unset (and no Docker context is chosen).
func TestEngineHost(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("DOCKER_CONTEXT", "")
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
		if _, err := Connect(context.Background()); err == nil || err.Error() != want {
			t.Errorf("DOCKER_HOST %q: %v; want %q", host, err, want)
		}
	}
	t.Setenv("DOCKER_HOST", "ssh://alice@192.0.2.10:2222")
	opts, err := resolveEngine().clientOpts()
	if err != nil || len(opts) != 5 {
		t.Fatalf("%d options, %v", len(opts), err)
	}
}

// TestEngineFromDockerContext: without DOCKER_HOST the engine is the
// Docker CLI context DOCKER_CONTEXT names, else the config file's
// currentContext, as the CLI resolves it; "default" is the local socket;
// DOCKER_HOST wins over both; a context that does not exist is an error
// naming it, not a silent fall back to the local engine. The contexts are
// written with the CLI's own context store, into a DOCKER_CONFIG folder.
func TestEngineFromDockerContext(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	st := store.New(filepath.Join(dir, "contexts"), store.NewConfig(func() any { return &map[string]any{} },
		store.EndpointTypeGetter(docker.DockerEndpoint, func() any { return &docker.EndpointMeta{} })))
	for name, host := range map[string]string{"build": "ssh://deploy@build-1:2222", "plain": "tcp://192.0.2.10:2375"} {
		err := st.CreateOrUpdate(store.Metadata{Name: name, Metadata: map[string]any{},
			Endpoints: map[string]any{docker.DockerEndpoint: docker.EndpointMeta{Host: host}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	check := func(what, want string, opts int) {
		t.Helper()
		if got := EngineHost(); got != want {
			t.Errorf("%s: EngineHost %q, want %q", what, got, want)
		}
		if o, err := resolveEngine().clientOpts(); err != nil || len(o) != opts {
			t.Errorf("%s: %d client options, %v; want %d", what, len(o), err, opts)
		}
	}
	check("no context", "unix:///var/run/docker.sock", 2)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext": "build"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	check("docker context use build", "ssh://deploy@build-1:2222 (Docker context build)", 5)
	t.Setenv("DOCKER_CONTEXT", "plain")
	check("DOCKER_CONTEXT=plain", "tcp://192.0.2.10:2375 (Docker context plain)", 3)
	t.Setenv("DOCKER_CONTEXT", "default")
	check("DOCKER_CONTEXT=default", "unix:///var/run/docker.sock", 2)
	t.Setenv("DOCKER_HOST", "tcp://192.0.2.11:2375")
	t.Setenv("DOCKER_CONTEXT", "build")
	check("DOCKER_HOST beside DOCKER_CONTEXT", "tcp://192.0.2.11:2375", 2)
	t.Setenv("DOCKER_HOST", "")
	t.Setenv("DOCKER_CONTEXT", "")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"currentContext": `), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := resolveEngine().clientOpts()
	if want := "the Docker CLI's configuration: parsing config file (" + filepath.Join(dir, "config.json") + "): "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("a config.json cut short: %v; want %q…", err, want)
	}
	t.Setenv("DOCKER_CONTEXT", "nosuch")
	_, err = Connect(context.Background())
	if want := `Docker context nosuch: context "nosuch": context not found`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("DOCKER_CONTEXT=nosuch: %v; want %q…", err, want)
	}
}
