package engine

import (
	"os"
	"runtime"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// ProcessSnapshot measures rmqtorture's own process: goroutines, open file
// descriptors (entries of /proc/self/fd; nil where there is none) and the
// heap in use after a forced garbage collection, in bytes. The collection
// makes HeapInuse comparable between snapshots: without it the figure
// depends on when the collector last ran. It costs one GC cycle and a
// stop-the-world for runtime.ReadMemStats, a few ms after each mode.
func ProcessSnapshot() *scenario.ProcessStats {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p := &scenario.ProcessStats{Goroutines: runtime.NumGoroutine(), HeapInuseBytes: ms.HeapInuse}
	// The listing holds one descriptor of its own while it reads the
	// folder; it is counted, the same in every snapshot.
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		n := len(fds)
		p.OpenFDs = &n
	}
	return p
}
