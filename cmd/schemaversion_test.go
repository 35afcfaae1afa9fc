package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemaVersion1FilesStillRead: a result.json written under
// schema_version 1 (as in users' CI) still renders with report, in the
// current layout, and still serves as compare's baseline.
func TestSchemaVersion1FilesStillRead(t *testing.T) {
	dir := t.TempDir()
	v1 := func(src string) string {
		data := readFile(t, src)
		old := strings.Replace(data, `"schema_version": 2,`, `"schema_version": 1,`, 1)
		if old == data {
			t.Fatalf("%s: no schema_version 2", src)
		}
		p := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(p, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stored := v1(storedResult)
	code, stdout, stderr := runCLI(t, "report", stored, "--format", "json")
	if code != ExitPass || stderr != "" || stdout != readFile(t, storedResult) {
		t.Fatalf("report of a version 1 file: exit %d, stderr %q, %d bytes; want exit 0 and the version 2 file (%d bytes)", code, stderr, len(stdout), len(readFile(t, storedResult)))
	}
	base := v1(baselineFile)
	if code, stdout, stderr := runCLI(t, "compare", base, baselineFile); code != ExitPass || !strings.Contains(stdout, "**No regression.**") {
		t.Fatalf("compare with a version 1 baseline: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}
