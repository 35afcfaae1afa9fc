package engine

import (
	"fmt"
	"os"
	"runtime"
	"testing"
)

// TestProcessSnapshotSeesLeaks: a goroutine and a file left open between two
// snapshots show as exactly one more of each, so the soak test's figures
// can catch a leak of one per mode.
func TestProcessSnapshotSeesLeaks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/self/fd is Linux's")
	}
	// Goroutines of earlier tests may still be ending: a few tries.
	var got string
	for try := 0; try < 5; try++ {
		if got = leakOfOne(t); got == "" {
			return
		}
	}
	t.Fatal(got)
}

// leakOfOne opens a file and starts a goroutine between two snapshots and
// describes any difference other than one more of each ("" when none).
func leakOfOne(t *testing.T) string {
	before := ProcessSnapshot()
	if before.OpenFDs == nil || *before.OpenFDs < 3 || before.Goroutines < 1 || before.HeapInuseBytes == 0 {
		t.Fatalf("snapshot %+v: want stdin/stdout/stderr open, a goroutine and a heap", before)
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stop := make(chan struct{})
	started := make(chan struct{})
	go func() { close(started); <-stop }()
	<-started
	after := ProcessSnapshot()
	close(stop)
	if *after.OpenFDs != *before.OpenFDs+1 || after.Goroutines != before.Goroutines+1 {
		return fmt.Sprintf("after one open file and one goroutine: fds %d → %d, goroutines %d → %d", *before.OpenFDs, *after.OpenFDs, before.Goroutines, after.Goroutines)
	}
	return ""
}
