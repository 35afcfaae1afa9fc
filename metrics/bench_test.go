package metrics

import (
	"testing"
	"time"
)

// BenchmarkConfirmPath is rmqtorture's own bookkeeping per confirmed message
// (track the delivery tag, record the publish, settle the confirm, record its
// latency): it must stay far below a broker round trip (~1 ms) so the tool
// measures the broker, not itself.
func BenchmarkConfirmPath(b *testing.B) {
	l := NewLedger("b-", b.N)
	tr := NewConfirmTracker()
	lat := NewLatency()
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		tag := uint64(i + 1)
		if ok, err := tr.Track(1, tag, i, now); !ok || err != nil {
			b.Fatal(ok, err)
		}
		l.Published(i, true)
		p, _ := tr.Settle(1, tag)
		if err := l.Settle(p.Seq, true); err != nil {
			b.Fatal(err)
		}
		lat.Record(time.Millisecond)
	}
}

// BenchmarkFireAndForgetPath is the bookkeeping per fire-and-forget publish.
func BenchmarkFireAndForgetPath(b *testing.B) {
	l := NewLedger("b-", b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l.Published(i, false)
		_ = l.Sent()
	}
}

// BenchmarkReconcile classifies a 20,000-order burst.
func BenchmarkReconcile(b *testing.B) {
	const n = 20000
	l := NewLedger("b-", n)
	for i := range n {
		l.Published(i, true)
		_ = l.Settle(i, true)
		if i%3 != 0 {
			l.Delivered(l.MessageID(i), false)
		}
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := l.Reconcile(true); err != nil {
			b.Fatal(err)
		}
	}
}
