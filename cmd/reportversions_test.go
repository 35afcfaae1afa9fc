package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportVersionsFolder: report re-renders a versions folder (run
// --images) in every format, exactly as the reports package renders it
// (its golden files), and refuses a versions.json that does not match its
// schema (exit 2, naming the file).
func TestReportVersionsFolder(t *testing.T) {
	data, err := os.ReadFile("../reports/testdata/versions.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "versions-20261201T200000Z-abcd1234")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "versions.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"--format", "summary"}, "versions.summary.golden"},
		{[]string{"-o", "wide"}, "versions.wide.golden"},
		{nil, "versions.md.golden"},
		{[]string{"-o", "json"}, "versions.golden.json"},
	} {
		for _, path := range []string{dir, filepath.Join(dir, "versions.json")} {
			code, stdout, stderr := runCLI(t, append([]string{"report", path}, tc.args...)...)
			want, err := os.ReadFile(filepath.Join("../reports/testdata", tc.golden))
			if err != nil {
				t.Fatal(err)
			}
			if code != ExitPass || stdout != string(want) {
				t.Errorf("report %s %v: exit %d, stderr %q, stdout differs from %s:\n%s", path, tc.args, code, stderr, tc.golden, stdout)
			}
		}
	}
	// A stored report anyone may have edited: a password in its command
	// and a terminal code in its tool are never printed; a key given twice
	// is refused with its line.
	edited := strings.Replace(strings.Replace(string(data), `"rmqtorture run delivery-limit`, `"rmqtorture run --uri amqp://u:S3cretPW@127.0.0.1:1/ delivery-limit`, 1),
		`"tool": "rmqtorture test"`, `"tool": "\u001b]0;pwned\u0007rmqtorture test"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "versions.json"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "report", dir)
	if code != ExitPass || strings.Contains(stdout, "S3cretPW") || strings.ContainsAny(stdout, "\x1b\x07") || !strings.Contains(stdout, "amqp://u:xxxxx@127.0.0.1:1/") {
		t.Errorf("edited versions.json: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	twice := strings.Replace(string(data), `"tool": `, `"tool": "x", "tool": `, 1)
	if err := os.WriteFile(filepath.Join(dir, "versions.json"), []byte(twice), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "report", dir)
	if want := `: not a versions report of this rmqtorture: line 3, column 16: /: "tool" given twice in one object: keep one` + "\n"; code != ExitUsage || !strings.HasSuffix(stderr, want) {
		t.Errorf("key given twice: exit %d, stderr %q, want it to end %q", code, stderr, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "versions.json"), []byte(`{"schema_version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCLI(t, "report", dir)
	if code != ExitUsage || stdout != "" || !strings.HasPrefix(stderr, "rmqtorture: "+filepath.Join(dir, "versions.json")+": not a versions report of this rmqtorture: ") {
		t.Fatalf("bad versions.json: exit %d\nstdout %q\nstderr %q", code, stdout, stderr)
	}
}
