package metrics

import (
	"runtime"
	"unsafe"
)

// offHeapMinIDs is the burst size from which the ledger's dense per-id
// arrays live outside the Go heap (see perIDArrays).
const offHeapMinIDs = 1 << 20

// perIDArrays allocates outcome, flags, attempts and deliveries for n ids,
// 8 bytes per id. From offHeapMinIDs ids on they share one anonymous
// memory mapping outside the Go heap (where the system has one): the
// garbage collector sets its next goal at twice the live heap (GOGC=100,
// https://go.dev/doc/gc-guide), so 80 MB of pointer-free arrays for
// 10,000,000 ids on the heap would let about as much garbage pile up
// before each collection, doubling the process's resident memory. The
// mapping is released when l becomes unreachable (runtime.AddCleanup);
// the arrays never leave the ledger's methods, which all hold l.
func (l *Ledger) perIDArrays(n int) {
	if n >= offHeapMinIDs {
		if mem, ok := mapAnonymous(8 * n); ok {
			base := unsafe.Pointer(unsafe.SliceData(mem))
			// Widest first: every array starts aligned for its element.
			l.deliveries = unsafe.Slice((*uint32)(base), n)
			l.attempts = unsafe.Slice((*uint16)(unsafe.Add(base, 4*n)), n)
			l.outcome = unsafe.Slice((*Outcome)(unsafe.Add(base, 6*n)), n)
			l.flags = unsafe.Slice((*uint8)(unsafe.Add(base, 7*n)), n)
			runtime.AddCleanup(l, unmap, mem)
			return
		}
	}
	l.outcome = make([]Outcome, n)
	l.flags = make([]uint8, n)
	l.attempts = make([]uint16, n)
	l.deliveries = make([]uint32, n)
}
