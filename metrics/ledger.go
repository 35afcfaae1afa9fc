// Package metrics holds rmqtorture's accounting: the per-message ledger that
// reconciles every order id, the publisher-confirm tracker keyed by channel
// epoch and delivery tag, latency histograms and rates. It does no I/O.
package metrics

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Outcome is the publisher-side state of one message id after its latest
// publish attempt. The spelling is the one used in reports.
type Outcome uint8

const (
	// NotSent: no publish of this id was attempted.
	NotSent Outcome = iota
	// InFlight: published on a channel in confirm mode, no confirm yet.
	InFlight
	// HandedOff: fire-and-forget publish returned no error; no confirm exists.
	HandedOff
	// Acked: the broker sent basic.ack for the latest attempt.
	Acked
	// Nacked: the broker sent basic.nack (for example x-overflow reject-publish).
	Nacked
	// ReturnedAcked: basic.return (mandatory, unroutable) came before the basic.ack.
	ReturnedAcked
	// InDoubt: the channel or connection died before the confirm, the confirm
	// timed out, or the publish call failed. Not a nack: amqp091-go reports a
	// closed channel as ack=false (rabbitmq/amqp091-go#46).
	InDoubt
	// NotPublished: the order's deadline passed before it ever left the
	// process: safe to report to the application as failed.
	NotPublished
)

func (o Outcome) String() string {
	return [...]string{"not-sent", "in-flight", "handed-off", "acked", "nacked", "returned", "in-doubt", "not-published"}[o]
}

// Ledger records, for a burst of N orders with sequence numbers 0..N-1, what the
// publisher learned about each id and how often the drain delivered it. It is
// safe for concurrent use. Ids are contiguous and ours, so state lives in dense
// slices, not maps: 8 bytes per id in a run without republishes or
// dead-lettering (BytesPerID), the rest allocated on first use.
type Ledger struct {
	mu         sync.Mutex
	prefix     string
	outcome    []Outcome
	flags      []uint8  // per id: flagBacklog, flagNacked, flagReturned, flagPastDeadline, flagEverInDoubt, flagSeen1
	attempts   []uint16 // publish attempts (first publish + republishes)
	deliveries []uint32
	// seenLater holds, for ids with a delivered copy of publish attempt
	// 2–64, bit a-1 for each such attempt a (attempt 1 is flagSeen1): only
	// ids published more than once have an entry.
	seenLater map[int]uint64
	// retried, parked and deadLettered are nil until the first such event
	// (a plain run never allocates them), then one uint32 per id: copies a
	// consumer republished to the retry queue, copies it republished to
	// the dead-letter queue, deliveries from the dead-letter queue.
	retried      []uint32
	parked       []uint32
	deadLettered []uint32
	// copies counts, per id, the attempts still awaiting a confirm beyond
	// the one that settles it: an id published again on the same channel
	// while an earlier attempt awaited its confirm (load.on_confirm_timeout:
	// republish) gets one confirm per copy. Absent for every other id.
	copies       map[int]int
	lateConfirms int // confirms of an attempt older than the id's latest
	unexpected   int
	redeliveries int
	republished  int
	pubErrors    int
	sentCount    int
	series       *Series // nil: no time series
	hist         ledgerHistory
	// base is the moment publish times and the dead-letter rule's down
	// moments count from: the ledger's creation, or the start of the
	// history it records to (so both count the same microseconds).
	base time.Time
	// pubUS holds, per id, its latest publish attempt's time in µs since
	// base (nil unless KeepPublishTimes: 8 bytes per id).
	pubUS []int64
	// dlRule, when set, tells a confirmed id lost on the dead-letter path
	// from a plain loss (see DeadLetterRule).
	dlRule *DeadLetterRule
	// atDelete holds, per id, the publish attempts made before the last
	// QueueDeleted, less those still awaiting their confirm then (nil
	// until a queue is deleted: 2 bytes per id after).
	atDelete []uint16
}

// Per-id flags (Ledger.flags).
const (
	// flagBacklog: the id is in the series' in-doubt backlog: in doubt, or
	// republished after being in doubt and not settled since.
	flagBacklog uint8 = 1 << iota
	// flagNacked: a basic.nack settled an attempt of the id at some point,
	// whatever came later.
	flagNacked
	// flagReturned: a basic.return was seen for the latest attempt.
	flagReturned
	// flagPastDeadline: written, and unconfirmed when its deadline passed.
	flagPastDeadline
	// flagEverInDoubt: at some point the id was in doubt.
	flagEverInDoubt
	// flagSeen1: a copy from publish attempt 1 was delivered.
	flagSeen1
)

// NewLedger returns a ledger for n orders whose message ids are prefix+seq
// (see MessageID).
func NewLedger(prefix string, n int) *Ledger {
	return &Ledger{
		prefix:     prefix,
		outcome:    make([]Outcome, n),
		flags:      make([]uint8, n),
		attempts:   make([]uint16, n),
		deliveries: make([]uint32, n),
		base:       time.Now(),
	}
}

// KeepPublishTimes makes the ledger keep each id's latest publish time,
// which a DeadLetterRule needs (8 bytes per id). Call it before the burst.
func (l *Ledger) KeepPublishTimes() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pubUS == nil {
		l.pubUS = make([]int64, len(l.outcome))
	}
}

// Attach makes the ledger count every publish, confirm, return and delivery
// it records into s, by time (see Series). Call it before the burst starts.
func (l *Ledger) Attach(s *Series) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.series = s
}

// joinBacklog puts seq in the series' in-doubt backlog and returns 1, or
// returns 0 when it is in already (a republished in-doubt id); the caller
// holds l.mu.
func (l *Ledger) joinBacklog(seq int) int {
	if l.flags[seq]&flagBacklog != 0 {
		return 0
	}
	l.flags[seq] |= flagBacklog
	return 1
}

// leaveBacklog takes seq out of the backlog (a confirm settled it) and
// returns -1, or 0 when it was not in it; the caller holds l.mu. A bit per
// id, not the attempt count, says who is in: under republish:
// nacked-and-in-doubt an id published again after a basic.nack was never
// in doubt.
func (l *Ledger) leaveBacklog(seq int) int {
	if l.flags[seq]&flagBacklog == 0 {
		return 0
	}
	l.flags[seq] &^= flagBacklog
	return -1
}

// Size is the number of orders in the burst.
func (l *Ledger) Size() int { return len(l.outcome) }

// MessageID is the AMQP message_id (and order id) of sequence number seq.
func (l *Ledger) MessageID(seq int) string { return l.prefix + strconv.Itoa(seq) }

// ParseID maps a message_id back to its sequence number; ok is false for an id
// this burst never produced.
func (l *Ledger) ParseID(id string) (seq int, ok bool) {
	rest, found := strings.CutPrefix(id, l.prefix)
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || n >= len(l.outcome) || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// Published records a publish attempt of seq. confirmMode says whether the
// channel is in confirm mode (the attempt then waits for a confirm) or not
// (fire-and-forget: the id is handed off). A second attempt of an id counts as
// a republish. It returns which attempt this is (1 for the first).
func (l *Ledger) Published(seq int, confirmMode bool) (attempt int) {
	return l.publishedAt(seq, confirmMode, time.Time{})
}

// publishedAt is Published with the attempt's publish time (zero: the
// time the confirm tracker reported for its delivery tag, else now).
func (l *Ledger) publishedAt(seq int, confirmMode bool, at time.Time) (attempt int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.attempts[seq] == 0
	if first {
		l.sentCount++
	} else {
		l.republished++
	}
	l.attempts[seq]++
	flight, backlog := 0, 0
	if confirmMode && l.outcome[seq] != InFlight {
		flight = 1
	}
	if confirmMode && l.outcome[seq] == InFlight && l.attempts[seq] > 1 {
		// A copy on the same channel while an earlier attempt still awaits
		// its confirm: one more confirm to come. The id joins the in-doubt
		// backlog as a republished, unconfirmed id unless it was one already.
		if l.copies == nil {
			l.copies = map[int]int{}
		}
		l.copies[seq]++
		backlog = l.joinBacklog(seq)
	}
	l.series.published(l.attempts[seq] > 1, flight, backlog)
	if confirmMode {
		// A new attempt is routed afresh: an earlier attempt's basic.return
		// says nothing about it. (Fire-and-forget records an attempt only
		// after its publish call returned, when its own return may already
		// have arrived, and never republishes an id that was sent.)
		l.flags[seq] &^= flagReturned
		l.outcome[seq] = InFlight
	} else {
		l.outcome[seq] = HandedOff
	}
	if l.hist.w != nil || l.pubUS != nil {
		t, tagged := l.hist.pop(seq)
		if at.IsZero() {
			at = t.at
			if !tagged {
				at = time.Now()
			}
		}
		t.at = at
		if l.hist.w != nil {
			l.hist.publish(seq, int(l.attempts[seq]), t)
		}
		if l.pubUS != nil {
			l.pubUS[seq] = at.Sub(l.base).Microseconds()
		}
	}
	return int(l.attempts[seq])
}

// PublishFailed records that a publish call of seq returned an error (counted
// in PublishErrors). In confirm mode the attempt, already recorded by
// Published, becomes in doubt; in fire-and-forget nothing was recorded yet
// (only a call that returned no error counts as sent) and the caller retries
// the order.
func (l *Ledger) PublishFailed(seq int, confirmMode bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pubErrors++
	if l.hist.w != nil {
		l.hist.seqTagged(HPublishFailed, seq)
	}
	if confirmMode {
		if l.outcome[seq] == InFlight {
			l.series.event(nil, -1, l.joinBacklog(seq))
		}
		l.outcome[seq] = InDoubt
		l.flags[seq] |= flagEverInDoubt
	}
}

// Returned records a basic.return of seq (mandatory and unroutable).
func (l *Ledger) Returned(seq int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flags[seq] |= flagReturned
	if l.hist.w != nil {
		l.hist.seq(HReturned, seq)
	}
	l.series.returned()
}

// Settle records the confirm of the latest attempt of seq: ack or nack.
// Settling an id that is not in flight is a bookkeeping bug and returns an error.
func (l *Ledger) Settle(seq int, ack bool) error {
	_, err := l.SettleAttempt(seq, 0, ack)
	return err
}

// SettleAttempt is Settle for a confirm that names the publish attempt its
// delivery tag carried (0: the latest). An id published again on the same
// channel while an earlier attempt still awaited its confirm
// (load.on_confirm_timeout: republish) has one confirm coming per copy: the
// first settles the id (settled is true), each later one only closes its
// copy. A confirm of an attempt older than the id's latest is a late
// confirm, matched to its id by delivery tag and counted (Counts.LateConfirms).
// A confirm for an id that is neither in flight nor has a copy open is a
// bookkeeping bug and returns an error.
func (l *Ledger) SettleAttempt(seq, attempt int, ack bool) (settled bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.settle(seq, ack)
	}
	if l.outcome[seq] != InFlight && l.copies[seq] == 0 {
		return false, fmt.Errorf("ledger: confirm for %s in state %s", l.MessageID(seq), l.outcome[seq])
	}
	if attempt > 0 && attempt < int(l.attempts[seq]) {
		l.lateConfirms++
	}
	if l.outcome[seq] != InFlight {
		l.dropCopy(seq)
		return false, nil
	}
	l.settleLocked(seq, ack)
	return true, nil
}

// dropCopy closes one open copy of seq; the caller holds l.mu.
func (l *Ledger) dropCopy(seq int) {
	if l.copies[seq]--; l.copies[seq] <= 0 {
		delete(l.copies, seq)
	}
}

// settleLocked records the ack or nack that settles in-flight seq; the
// caller holds l.mu.
func (l *Ledger) settleLocked(seq int, ack bool) {
	l.series.settled(ack, l.leaveBacklog(seq))
	switch {
	case !ack:
		l.outcome[seq] = Nacked
		l.flags[seq] |= flagNacked
	case l.flags[seq]&flagReturned != 0:
		l.outcome[seq] = ReturnedAcked
	default:
		l.outcome[seq] = Acked
	}
}

// MarkInDoubt records that an attempt of seq will never be confirmed
// (channel closed, confirm timed out). It reports whether the id went in
// doubt: false when it was not in flight, e.g. a copy left open after an
// earlier confirm settled its id (load.on_confirm_timeout: republish), whose
// copy it then closes.
func (l *Ledger) MarkInDoubt(seq int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.seq(HInDoubt, seq)
	}
	if l.outcome[seq] == InFlight {
		l.series.event(nil, -1, l.joinBacklog(seq))
		l.outcome[seq] = InDoubt
		l.flags[seq] |= flagEverInDoubt
		return true
	}
	if l.copies[seq] > 0 {
		l.dropCopy(seq)
	}
	return false
}

// Delivered records one delivery of message id (from the drain). Ids that this
// burst never published count as unexpected. A delivery flagged redelivered
// of an id already seen is the same stored message handed out again (a
// consumer's channel closed before its ack), counted as a redelivery, not as
// a duplicate.
func (l *Ledger) Delivered(id string, redelivered bool) { l.DeliveredAttempt(id, redelivered, 0) }

// DeliveredAttempt is Delivered for a message that says which publish
// attempt (1-based) it came from (0: unknown). Then a delivery flagged
// redelivered is a redelivery only if a copy of that same attempt was
// delivered before: the broker sets the flag on a copy it requeued, which
// may be a republished copy nobody has seen yet, i.e. a duplicate.
func (l *Ledger) DeliveredAttempt(id string, redelivered bool, attempt int) {
	l.delivery(id, HistoryRecord{Kind: HDelivered, Redelivered: redelivered, Attempt: attempt},
		func(seq int) { l.deliveredLocked(seq, redelivered, attempt) })
}

// delivery records one delivery of id in the series and runs fn with the
// ledger locked, or counts it as unexpected when this burst never
// published id. A probe (IsProbeID) is no order and is not recorded.
func (l *Ledger) delivery(id string, rec HistoryRecord, fn func(seq int)) {
	if IsProbeID(id) {
		return // rmqtorture's own probe, not an order
	}
	seq, ok := l.ParseID(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.delivery(rec, id, seq, ok)
	}
	if !ok || l.attempts[seq] == 0 {
		l.unexpected++
		return
	}
	l.series.delivered(l.deliveries[seq] == 0 && l.deadLetteredOf(seq) == 0)
	fn(seq)
}

func (l *Ledger) deliveredLocked(seq int, redelivered bool, attempt int) {
	if attempt >= 1 && attempt <= 64 {
		if redelivered && l.seenAttempt(seq, attempt) {
			l.redeliveries++
			return
		}
		l.markSeen(seq, attempt)
		l.deliveries[seq]++
		return
	}
	if redelivered && l.deliveries[seq] > 0 {
		l.redeliveries++
		return
	}
	l.deliveries[seq]++
}

// Retried records that a consumer republished a copy of id to the retry
// queue: a later delivery of that copy from the work queue is explained by
// the retry, not a duplicate. Unknown ids are ignored (their deliveries
// count as unexpected).
func (l *Ledger) Retried(id string) { l.bump(id, HRetried, &l.retried) }

// Parked records that a consumer republished a copy of id to the
// dead-letter queue: it explains one copy there.
func (l *Ledger) Parked(id string) { l.bump(id, HParked, &l.parked) }

// bump adds one to (*counts)[seq] for a known id, allocating *counts on
// first use; unknown ids are ignored.
func (l *Ledger) bump(id string, kind HistoryKind, counts *[]uint32) {
	if seq, ok := l.ParseID(id); ok {
		l.mu.Lock()
		if l.hist.w != nil {
			l.hist.seq(kind, seq)
		}
		l.count(counts, seq)
		l.mu.Unlock()
	}
}

// DeadLettered records one delivery of id from the dead-letter queue: the
// message survived (it is not lost) and ended there.
func (l *Ledger) DeadLettered(id string) {
	l.delivery(id, HistoryRecord{Kind: HDeadLettered}, func(seq int) { l.count(&l.deadLettered, seq) })
}

// MarkNotPublished records that seq's deadline passed before any publish
// attempt; it returns false, changing nothing, when seq was already
// attempted (then it is pending, not unpublished).
func (l *Ledger) MarkNotPublished(seq int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.seq(HNotPublished, seq)
	}
	if l.attempts[seq] > 0 {
		return false
	}
	l.outcome[seq] = NotPublished
	return true
}

// MarkPastDeadline records that seq had been written but was still
// unconfirmed when its deadline passed: it may exist, and it keeps being
// republished until confirmed or the run ends.
func (l *Ledger) MarkPastDeadline(seq int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.seq(HPastDeadline, seq)
	}
	if l.attempts[seq] > 0 {
		l.flags[seq] |= flagPastDeadline
	}
}

// Sent is the number of distinct ids with at least one publish attempt.
func (l *Ledger) Sent() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sentCount
}

// Pending counts, in one scan of every id (~1 ms per million), the ids
// whose latest publish attempt awaits its publisher confirm (basic.ack,
// basic.nack) or transaction commit (inFlight: sent in a confirm mode, not
// yet settled, returned or in doubt), and those plus the ids in doubt
// (unsettled: published, their fate not known yet). For the moment a
// fault takes effect.
func (l *Ledger) Pending() (inFlight, unsettled int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, o := range l.outcome {
		switch o {
		case InFlight:
			inFlight++
			unsettled++
		case InDoubt:
			unsettled++
		}
	}
	return inFlight, unsettled
}

// Attempts returns how many publish attempts of seq were recorded.
func (l *Ledger) Attempts(seq int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.attempts[seq])
}

// Outcome returns the latest outcome of seq.
func (l *Ledger) Outcome(seq int) Outcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.outcome[seq]
}

// AllConfirmedDelivered reports whether every id whose latest attempt was
// basic.ack'd has been delivered at least once. The drain uses it to tell
// "idle because done" from "idle with confirmed messages missing".
func (l *Ledger) AllConfirmedDelivered() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for seq, o := range l.outcome {
		if o == Acked && l.deliveries[seq] == 0 && l.deadLetteredOf(seq) == 0 {
			return false
		}
	}
	return true
}
