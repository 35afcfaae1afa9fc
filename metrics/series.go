package metrics

import (
	"math"
	"sync"
	"time"
)

// DefaultBucket is the width of a Series bucket unless the run says otherwise.
const DefaultBucket = 250 * time.Millisecond

// BrokerState is what the broker was doing during a stretch of a burst, as
// seen from the timeline (see StateSpan).
type BrokerState string

const (
	StateUp           BrokerState = "up"
	StateBlocked      BrokerState = "blocked"      // connection.blocked (e.g. memory alarm) held the publisher
	StatePaused       BrokerState = "paused"       // container frozen
	StateDisconnected BrokerState = "disconnected" // container cut from its network
	StateDown         BrokerState = "down"         // container killed, stopped or restarting, AMQP not yet accepting
)

// severity orders states for a bucket that saw several: the worst wins.
func (s BrokerState) severity() int {
	switch s {
	case StateBlocked:
		return 1
	case StatePaused:
		return 2
	case StateDisconnected:
		return 3
	case StateDown:
		return 4
	}
	return 0
}

// StateSpan is a stretch [FromMS, ToMS) of a burst, in ms since the burst
// start, during which the broker was in State.
type StateSpan struct {
	FromMS float64     `json:"from_ms"`
	ToMS   float64     `json:"to_ms"`
	State  BrokerState `json:"state"`
}

// seriesBucket is what happened in one bucket; the gauges are their values
// after the bucket's last event (set says there was one).
type seriesBucket struct {
	published, acked, nacked, returned, delivered int
	republished                                   int
	inFlight                                      int
	set                                           bool
}

// SeriesTotals are a Series' running totals, for a live progress line.
type SeriesTotals struct {
	Published int // publish attempts, republishes included
	Sent      int // distinct ids with at least one publish attempt (Published - Sent are republishes)
	Acked     int // basic.acks received (an acked id is confirmed only once the drain delivers it: see Counts.Confirmed)
	Nacked    int // basic.nacks
	Returned  int // basic.returns
	Delivered int // deliveries of this burst's ids (duplicates and redeliveries included)
	Received  int // distinct ids delivered at least once (the work queue or the dead-letter queue)
	InFlight  int // published in confirm mode, no confirm yet and not given up
	Backlog   int // ids in doubt, or republished after being in doubt and not yet acked
}

// Series counts a burst's publishes, confirms, returns and deliveries in
// fixed buckets by offset from the burst start, and tracks two gauges: in
// flight (published in confirm mode, no basic.ack or basic.nack yet) and the
// in-doubt backlog (ids whose confirm was lost and that are not settled
// since). A Ledger the Series is attached to (Ledger.Attach) feeds it; it is
// safe for concurrent use and costs one short lock and one clock read per
// event.
type Series struct {
	mu      sync.Mutex
	start   time.Time
	bucket  time.Duration
	now     func() time.Time // the clock; tests replace it
	buckets []seriesBucket
	totals  SeriesTotals
	// backlogZero lists the times the backlog changed between zero (true:
	// became zero) and non-zero (false), in order.
	backlogAt   []time.Time
	backlogZero []bool
}

// NewSeries returns an empty series of buckets of width bucket (DefaultBucket
// when not positive) starting at start.
func NewSeries(start time.Time, bucket time.Duration) *Series {
	if bucket <= 0 {
		bucket = DefaultBucket
	}
	return &Series{start: start, bucket: bucket, now: time.Now}
}

// SetClock replaces the series' clock (time.Now), for tests and replays.
func (s *Series) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Start is the series' origin.
func (s *Series) Start() time.Time { return s.start }

// Bucket is the bucket width.
func (s *Series) Bucket() time.Duration { return s.bucket }

// Totals returns the running totals and gauges now.
func (s *Series) Totals() SeriesTotals {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals
}

// at returns the bucket of now, growing the slice; callers hold mu.
func (s *Series) at(now time.Time) *seriesBucket {
	i := 0
	if d := now.Sub(s.start); d > 0 {
		i = int(d / s.bucket)
	}
	for len(s.buckets) <= i {
		s.buckets = append(s.buckets, seriesBucket{})
	}
	return &s.buckets[i]
}

// event counts one event; dFlight and dBacklog change the gauges. A nil
// Series counts nothing.
func (s *Series) event(field func(*seriesBucket, *SeriesTotals), dFlight, dBacklog int) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	b := s.at(now)
	if field != nil {
		field(b, &s.totals)
	}
	s.totals.InFlight += dFlight
	before := s.totals.Backlog
	s.totals.Backlog += dBacklog
	if (before == 0) != (s.totals.Backlog == 0) {
		s.backlogAt = append(s.backlogAt, now)
		s.backlogZero = append(s.backlogZero, s.totals.Backlog == 0)
	}
	b.inFlight, b.set = s.totals.InFlight, true
}

// published counts a publish attempt; again says it is a republish of an
// id published before (not counted in Sent).
func (s *Series) published(again bool, dFlight, dBacklog int) {
	s.event(func(b *seriesBucket, t *SeriesTotals) {
		b.published++
		t.Published++
		if again {
			b.republished++
		} else {
			t.Sent++
		}
	}, dFlight, dBacklog)
}

func (s *Series) settled(ack bool, dBacklog int) {
	if ack {
		s.event(func(b *seriesBucket, t *SeriesTotals) { b.acked++; t.Acked++ }, -1, dBacklog)
	} else {
		s.event(func(b *seriesBucket, t *SeriesTotals) { b.nacked++; t.Nacked++ }, -1, dBacklog)
	}
}

func (s *Series) returned() {
	s.event(func(b *seriesBucket, t *SeriesTotals) { b.returned++; t.Returned++ }, 0, 0)
}

// delivered counts a delivery; first says it is the id's first.
func (s *Series) delivered(first bool) {
	s.event(func(b *seriesBucket, t *SeriesTotals) {
		b.delivered++
		t.Delivered++
		if first {
			t.Received++
		}
	}, 0, 0)
}

// BacklogClearedAfter returns the first time at or after t at which the
// in-doubt backlog was zero, and false when it never was again.
func (s *Series) BacklogClearedAfter(t time.Time) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	zero := true // the backlog starts empty
	for i, at := range s.backlogAt {
		if at.After(t) {
			if zero {
				return t, true
			}
			if s.backlogZero[i] {
				return at, true
			}
			continue
		}
		zero = s.backlogZero[i]
	}
	if zero {
		return t, true
	}
	return time.Time{}, false
}

// SeriesData is a Series sampled for result.json: index i of every slice is
// bucket i, covering [i·BucketMS, (i+1)·BucketMS) ms since the burst start.
// Counts are events in the bucket; InFlight is the gauge at the bucket's end.
type SeriesData struct {
	BucketMS  float64 `json:"bucket_ms"`
	Published []int   `json:"published"` // publish attempts (republishes included)
	Acked     []int   `json:"acked"`     // basic.acks received (not Counts.Confirmed, which also needs the drain to deliver the id)
	Nacked    []int   `json:"nacked"`    // basic.nacks
	Returned  []int   `json:"returned"`  // basic.returns (mandatory, unroutable)
	Delivered []int   `json:"delivered"` // deliveries of this burst's ids (drain, consumers)
	// InFlight is published in confirm mode and not yet acked or nacked nor given
	// up as in doubt, at the bucket's end; always 0 in fire-and-forget.
	InFlight   []int         `json:"in_flight"`
	Reconnects []int         `json:"reconnects"` // publisher reconnections
	Broker     []BrokerState `json:"broker"`     // worst broker state during the bucket
	// Republished is the publish attempts of ids published before (in-doubt
	// or confirm-timeout republishes), included in Published. Absent from
	// results written before it existed.
	Republished []int `json:"republished,omitempty"`
	// States are the exact stretches in which the broker was not up, in ms
	// since the burst start, as Mark was given them (clipped to the series):
	// Broker says which buckets they touched, States when they began and
	// ended within them. Absent from results written before it existed.
	States []StateSpan `json:"states,omitempty"`
}

// Len is the number of buckets.
func (d *SeriesData) Len() int { return len(d.Published) }

// Sample returns the buckets from the start up to end (at least one, and at
// least every bucket that saw an event), with every broker state up and no
// reconnects; Mark fills those in.
func (s *Series) Sample(end time.Time) SeriesData {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := max(len(s.buckets), int(math.Ceil(float64(end.Sub(s.start))/float64(s.bucket))), 1)
	d := SeriesData{
		BucketMS:    Millis(s.bucket),
		Published:   make([]int, n),
		Acked:       make([]int, n),
		Nacked:      make([]int, n),
		Returned:    make([]int, n),
		Delivered:   make([]int, n),
		InFlight:    make([]int, n),
		Reconnects:  make([]int, n),
		Broker:      make([]BrokerState, n),
		Republished: make([]int, n),
	}
	flight := 0
	for i := range n {
		if i < len(s.buckets) {
			b := s.buckets[i]
			d.Published[i], d.Acked[i], d.Nacked[i], d.Returned[i], d.Delivered[i] = b.published, b.acked, b.nacked, b.returned, b.delivered
			d.Republished[i] = b.republished
			if b.set {
				flight = b.inFlight
			}
		}
		d.InFlight[i] = flight
		d.Broker[i] = StateUp
	}
	return d
}

// Mark records broker states and reconnects (times in ms since the burst
// start) in the buckets they touch. A bucket touched by several states gets
// the worst (down, disconnected, paused, blocked, up); spans and reconnects
// past the last bucket are clipped. The spans that are not up are also kept,
// clipped to the series, in States, so a chart can shade from the exact
// instant a fault took effect rather than from the start of its bucket.
func (d *SeriesData) Mark(spans []StateSpan, reconnectsMS []float64) {
	if d.BucketMS <= 0 {
		return
	}
	idx := func(ms float64) int { return min(max(int(ms/d.BucketMS), 0), d.Len()-1) }
	end := float64(d.Len()) * d.BucketMS
	for _, sp := range spans {
		if sp.ToMS <= sp.FromMS {
			continue
		}
		if sp.State != StateUp && sp.FromMS < end && sp.ToMS > 0 {
			d.States = append(d.States, StateSpan{FromMS: max(sp.FromMS, 0), ToMS: min(sp.ToMS, end), State: sp.State})
		}
		// The bucket of the span's last instant: an end exactly on a bucket
		// boundary does not touch the next bucket.
		last := int(math.Ceil(sp.ToMS/d.BucketMS)) - 1
		for i := idx(sp.FromMS); i <= min(last, d.Len()-1); i++ {
			if sp.State.severity() > d.Broker[i].severity() {
				d.Broker[i] = sp.State
			}
		}
	}
	for _, ms := range reconnectsMS {
		d.Reconnects[idx(ms)]++
	}
}

// Coarsen returns d regrouped so that it has at most maxBuckets buckets,
// each factor original buckets wide (factor the smallest that fits, 1 when d
// already fits: d itself is returned). Counts are summed, InFlight is the
// gauge at the group's end, Broker the worst state in the group; States
// (exact times) are kept. A chart a few hundred points wide needs no more:
// a soak at --bucket 1ms would otherwise draw millions of points.
func (d *SeriesData) Coarsen(maxBuckets int) (c *SeriesData, factor int) {
	n := d.Len()
	if maxBuckets < 1 || n <= maxBuckets {
		return d, 1
	}
	factor = (n + maxBuckets - 1) / maxBuckets
	groups := (n + factor - 1) / factor
	sum := func(s []int) []int {
		if s == nil {
			return nil
		}
		out := make([]int, groups)
		for i, v := range s {
			out[i/factor] += v
		}
		return out
	}
	c = &SeriesData{
		BucketMS: d.BucketMS * float64(factor), Published: sum(d.Published), Acked: sum(d.Acked), Nacked: sum(d.Nacked),
		Returned: sum(d.Returned), Delivered: sum(d.Delivered), Reconnects: sum(d.Reconnects), Republished: sum(d.Republished),
		States: d.States,
	}
	if len(d.InFlight) > 0 {
		c.InFlight = make([]int, groups)
		for g := range groups {
			c.InFlight[g] = d.InFlight[min((g+1)*factor, len(d.InFlight))-1]
		}
	}
	if len(d.Broker) > 0 {
		c.Broker = make([]BrokerState, groups)
		for i, st := range d.Broker {
			if g := i / factor; c.Broker[g] == "" || st.severity() > c.Broker[g].severity() {
				c.Broker[g] = st
			}
		}
	}
	return c, factor
}
