package traffic

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
)

// Pacer is a publisher's rate (or burst) schedule: publish call k is due
// at its start + after(k); intended is each order's first due time (unix
// ns; 0 not yet). The zero Pacer, or a nil one, paces nothing.
type Pacer struct {
	mu       sync.Mutex
	start    time.Time
	paced    int64
	intended []atomic.Int64
	after    func(k int64) time.Duration
}

// NewPacer returns the schedule of a burst of messages orders, call k due
// after(k) after the first.
func NewPacer(messages int, after func(k int64) time.Duration) *Pacer {
	return &Pacer{intended: make([]atomic.Int64, messages), after: after}
}

// Pace waits for the next slot of the schedule (bounded by ctx), and
// records it as seq's intended send time unless seq had one. A publisher
// behind schedule does not wait: it catches up, and confirm latency from
// the intended time keeps the delay it suffered (no coordinated omission).
func (s *Pacer) Pace(ctx context.Context, seq int) error {
	if s == nil || s.intended == nil {
		return nil
	}
	s.mu.Lock()
	if s.paced == 0 {
		s.start = time.Now()
	}
	due := s.start.Add(s.after(s.paced))
	s.paced++
	s.mu.Unlock()
	s.intended[seq].CompareAndSwap(0, due.UnixNano())
	return engine.Sleep(ctx, time.Until(due))
}

// RecordIntended records, when the plan measures it, the latency of seq
// settled at now from its intended send time (none when seq was never
// paced).
func (s *Pacer) RecordIntended(h *metrics.Latency, seq int, now time.Time) {
	if h != nil && s != nil && s.intended != nil {
		if due := s.intended[seq].Load(); due != 0 {
			h.Record(now.Sub(time.Unix(0, due)))
		}
	}
}

// Start is when the schedule's first call was due (zero before it).
func (s *Pacer) Start() time.Time { return s.start }

// Paced is how many calls took a slot.
func (s *Pacer) Paced() int64 { return s.paced }

// Intended is seq's intended send time (unix ns; 0 not yet).
func (s *Pacer) Intended(seq int) int64 { return s.intended[seq].Load() }
