package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// No password reaches the terminal, whatever quotes it: DOCKER_HOST's
// inside the Docker client's own error (which writes it without the URL's
// scheme), and a --uri stored in a result's command when the result is
// rendered. No terminal code from a file (a stored result, a scenario's
// description) is written raw either.
func TestSecretsAndTerminalCodesNeverPrinted(t *testing.T) {
	const pw = "S3cretPW"
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Run("DOCKER_HOST", func(t *testing.T) {
		t.Setenv("DOCKER_HOST", "http://alice:"+pw+"@127.0.0.1:1")
		code, stdout, stderr := runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir())
		if code != ExitError || !strings.Contains(stderr, "cannot reach the Docker Engine at http://alice:xxxxx@127.0.0.1:1") || strings.Contains(stdout+stderr, pw) {
			t.Fatalf("exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
		}
	})
	t.Run("a stored result", func(t *testing.T) {
		res := strings.Replace(readFile(t, storedResult), `"command": "rmqtorture run kill-mid-burst`,
			`"command": "rmqtorture run kill-mid-burst --uri amqp://bob:`+pw+`@broker.example:5672/`, 1)
		res = strings.Replace(res, `"description": "20,000 persistent orders`, `"description": "\u001b]0;owned\u0007\u001b[31m20,000 persistent orders`, 1)
		file := filepath.Join(t.TempDir(), "result.json")
		if err := os.WriteFile(file, []byte(res), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"markdown", "json", "table"} {
			code, stdout, stderr := runCLI(t, "report", file, "--format", format)
			if code != ExitPass || strings.Contains(stdout+stderr, pw) || strings.ContainsAny(stdout+stderr, "\x1b\x07") ||
				(format == "json" && !strings.Contains(stdout, "amqp://bob:xxxxx@broker.example:5672/")) {
				t.Fatalf("report --format %s: exit %d\nstdout %q\nstderr %q", format, code, stdout, stderr)
			}
		}
	})
	t.Run("a scenario's description", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "s.yaml")
		if err := os.WriteFile(file, []byte("version: 1\nscenarios:\n  - name: s\n    description: \"\\e]0;owned\\a\\e[2JWipes the screen.\"\n    load: {messages: 10}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCLI(t, "list", "-f", file)
		if code != ExitPass || !strings.Contains(stdout, "s Wipes the screen.\n") || strings.ContainsAny(stdout+stderr, "\x1b\x07") {
			t.Fatalf("list: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
		}
	})
}

// A malformed RMQTORTURE_URI is named as such, not as --uri, and its
// password is not quoted.
func TestMalformedURIFromTheEnvironmentIsNamed(t *testing.T) {
	t.Setenv("RMQTORTURE_URI", "amqp://u:longpassword@h:notaport/")
	code, stdout, stderr := runCLI(t, "run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", t.TempDir())
	if want := "rmqtorture: RMQTORTURE_URI: not an AMQP URI: it does not parse as a URL"; code != ExitUsage || !strings.HasPrefix(stderr, want) || strings.Contains(stdout+stderr, "longpassword") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q\nwant exit 2 and %q", code, stdout, stderr, want)
	}
}

// validate prints the plan with a command step's ready URIs masked.
func TestValidateMasksReadyPasswords(t *testing.T) {
	file := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(file, []byte("version: 1\nscenarios:\n  - name: s\n    load: {messages: 100}\n    faults: [{action: command, published: 50, inject: [docker, kill, b], ready: [\"amqp://alice:Pw0rdXyz@host:5672/\"]}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "validate", "-f", file)
	if code != ExitPass || strings.Contains(stdout+stderr, "Pw0rdXyz") || !strings.Contains(stdout, "amqp://alice:xxxxx@host:5672/") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}
