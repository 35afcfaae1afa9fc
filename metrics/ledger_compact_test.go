package metrics

import (
	"runtime"
	"testing"
)

// plainRun publishes, acks and delivers every id of l once (confirm mode).
func plainRun(l *Ledger) {
	for i := range l.Size() {
		l.Published(i, true)
		_ = l.Settle(i, true)
		l.DeliveredAttempt(l.MessageID(i), false, 1)
	}
}

// TestLedgerBytesPerIDPlainRun: a plain confirm run keeps outcome, flags,
// attempts and deliveries per id, 1+1+2+4 = 8 bytes (the ceiling is 16
// bytes, issue 14: 10,000,000 ids in 160 MB at most); lazily allocated
// state appears only with the events that need it.
func TestLedgerBytesPerIDPlainRun(t *testing.T) {
	const n = 1000
	l := NewLedger("p-", n)
	plainRun(l)
	if got := l.BytesPerID(); got != 8 {
		t.Fatalf("plain run: %v bytes per id, want 8", got)
	}
	if c, _, err := l.Reconcile(true); err != nil || c.Sent != n || c.Delivered != n || c.Duplicates != 0 {
		t.Fatalf("plain run reconciles to %+v, %v", c, err)
	}
	// One dead-lettered delivery allocates one uint32 per id (+4).
	l.DeadLettered(l.MessageID(3))
	if got := l.BytesPerID(); got != 12 {
		t.Fatalf("after a dead-letter delivery: %v bytes per id, want 12", got)
	}
	// A delivered copy of attempt 2 adds one sparse entry (16 bytes / n).
	l.Published(5, true)
	l.DeliveredAttempt(l.MessageID(5), false, 2)
	if got, want := l.BytesPerID(), 12+16.0/n; got != want {
		t.Fatalf("after a second attempt's delivery: %v bytes per id, want %v", got, want)
	}
}

// BenchmarkLedgerPlainRunMemory reports the heap a plain confirm run of
// 1,000,000 ids holds (B/id, from runtime.MemStats.HeapAlloc before and
// after) and the ledger's own figure (ledger-B/id, BytesPerID).
func BenchmarkLedgerPlainRunMemory(b *testing.B) {
	const n = 1_000_000
	var heap, own float64
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		l := NewLedger("b-", n)
		plainRun(l)
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / n
		own = l.BytesPerID()
		runtime.KeepAlive(l)
	}
	b.ReportMetric(heap, "heap-B/id")
	b.ReportMetric(own, "ledger-B/id")
}
