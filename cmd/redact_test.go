package cmd

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// planted is the password the secrets tests plant; no output may carry it.
const planted = "s3cr3tpass"

// grepTree fails the test for every file under dir that holds s.
func grepTree(t *testing.T, dir, s string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(s)) {
			t.Errorf("%s holds %q", path, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlantedPasswordNeverPrinted runs commands with a password in
// DOCKER_HOST (an engine that does not answer) and finds it in no output:
// stdout, stderr, the report folder, the state folder. The Docker client's
// own error quoted it twice on stderr before.
func TestPlantedPasswordNeverPrinted(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://u:"+planted+"@127.0.0.1:1")
	out, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	for _, args := range [][]string{
		{"run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", out},
		{"run", "kill-mid-burst", "-f", "../scenarios.yaml", "--out", out, "-v", "--container", "rabbit"},
		{"cleanup"},
		{"cleanup", "--all", "--dry-run"},
		{"cleanup", "--run", "3f2a9c01", "--force"},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != ExitError || !strings.Contains(stderr, "cannot reach the Docker Engine at tcp://u:xxxxx@127.0.0.1:1") {
			t.Errorf("%v: exit %d, stderr %q; want exit 4 naming the redacted engine address", args, code, stderr)
		}
		if strings.Contains(stdout+stderr, planted) {
			t.Errorf("%v printed the password:\nstdout %q\nstderr %q", args, stdout, stderr)
		}
	}
	grepTree(t, out, planted)
	grepTree(t, state, planted)
}

// TestResultRedacted: a result whose error, reasons and fault errors quote
// a URL with a password (DOCKER_HOST in a Docker error, an AMQP URL) and a
// broker's coloured log tail reaches stdout, result.json and report.md with
// neither the password nor a terminal code.
func TestResultRedacted(t *testing.T) {
	res, err := loadResult(storedResult)
	if err != nil {
		t.Fatal(err)
	}
	tail := "\x1b[38;5;160m2025-01-01 [error] boot failed\x1b[0m | connecting to amqp://admin:" + planted + "@rabbit:5672"
	res.Error = "broker did not come up; its last log lines: " + tail
	res.Verdict.Reasons = append(res.Verdict.Reasons, "cannot reach tcp://u:"+planted+"@127.0.0.1:1")
	res.Modes[0].Faults[0].Error = "kill: Cannot connect to the Docker daemon at tcp://u:" + planted + "@127.0.0.1:1."
	var stdout bytes.Buffer
	c := &cobra.Command{}
	c.SetOut(&stdout)
	dir := filepath.Join(t.TempDir(), "run")
	if err := (&runOpts{}).write(c, slog.New(slog.DiscardHandler), dir, res); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{planted, "\x1b", `\u001b`} {
		if strings.Contains(stdout.String(), bad) {
			t.Errorf("stdout holds %q", bad)
		}
		grepTree(t, dir, bad)
	}
	data := readFile(t, filepath.Join(dir, "result.json"))
	for _, want := range []string{"2025-01-01 [error] boot failed | connecting to amqp://admin:xxxxx@rabbit:5672", "tcp://u:xxxxx@127.0.0.1:1"} {
		if !strings.Contains(data, want) {
			t.Errorf("result.json lacks %q", want)
		}
	}
}

// TestLogRedacted: a log line's message, string attributes and errors lose
// URL passwords and terminal codes.
func TestLogRedacted(t *testing.T) {
	var buf bytes.Buffer
	log := (&globalOpts{}).logger(&buf)
	log.Info("keeping broker container at amqp://guest:"+planted+"@127.0.0.1:5672/",
		"amqp", "amqp://guest:"+planted+"@127.0.0.1:5672/", "err", errors.New("dial tcp://u:"+planted+"@h:1: \x1b[31mrefused\x1b[0m"))
	got := buf.String()
	if strings.Contains(got, planted) || strings.Contains(got, "\x1b") || strings.Contains(got, `\x1b`) || !strings.Contains(got, "amqp://guest:xxxxx@127.0.0.1:5672/") {
		t.Fatalf("log line %q", got)
	}
}
