package metrics

import (
	"fmt"
	"slices"
	"time"
)

// Counts is the reconciled ledger of one burst. The classes Confirmed, Lost,
// LostDeadLetterPath, Unverified, Nacked, Returned, InDoubt,
// UnconfirmedDelivered, UnconfirmedMissing and Resurrected partition the sent ids: they
// add up to Sent (Reconcile checks it). The other fields are counters beside
// the partition.
type Counts struct {
	Sent int `json:"sent"` // distinct ids with at least one publish attempt

	Confirmed            int `json:"confirmed"`             // basic.ack and delivered by the drain
	Lost                 int `json:"lost"`                  // basic.ack but never delivered: durability broken
	Unverified           int `json:"unverified"`            // acked or handed off, but the drain did not complete (broker not back, drain deadline): neither delivered nor lost
	Nacked               int `json:"nacked"`                // basic.nack from the broker
	Returned             int `json:"returned"`              // basic.return (unroutable) before its basic.ack
	InDoubt              int `json:"in_doubt"`              // never confirmed: channel died, confirm timed out, run ended
	InDoubtDelivered     int `json:"in_doubt_delivered"`    // of InDoubt, delivered anyway
	UnconfirmedDelivered int `json:"unconfirmed_delivered"` // fire-and-forget, delivered
	UnconfirmedMissing   int `json:"unconfirmed_missing"`   // fire-and-forget, never delivered: lost silently

	WentInDoubt             int `json:"went_in_doubt"`             // ids in doubt at some point (e.g. at a kill), whatever came later
	Republished             int `json:"republished"`               // republish attempts (same message id) after in-doubt (or basic.nack, under republish: nacked-and-in-doubt)
	PublishErrors           int `json:"publish_errors"`            // publish calls that returned an error
	Delivered               int `json:"delivered"`                 // distinct sent ids delivered at least once
	Deliveries              int `json:"deliveries"`                // all deliveries of sent ids
	Duplicates              int `json:"duplicates"`                // deliveries beyond the first of each id
	DuplicatesFromRepublish int `json:"duplicates_from_republish"` // of Duplicates, explained by a republish of that id
	Unexpected              int `json:"unexpected"`                // deliveries of ids never published in this burst
	NotPublished            int `json:"not_published"`             // orders whose deadline passed before they left the process (not sent)
	PendingAtDeadline       int `json:"pending_at_deadline"`       // sent ids still unconfirmed when their deadline passed (they may exist)
	Redeliveries            int `json:"redeliveries"`              // deliveries flagged redelivered of ids already seen (not duplicates)
	// DeadLettered counts the distinct ids found in the dead-letter queue
	// (queue.dead_letter_queue): they survived, so they are not lost.
	DeadLettered int `json:"dead_lettered"`
	// RetryDeliveries counts deliveries from the work queue of copies a
	// consumer republished for a retry (on_delivery: retry): expected, so
	// not duplicates.
	RetryDeliveries int `json:"retry_deliveries"`
	// LateConfirms counts basic.acks and basic.nacks of an attempt older
	// than its id's latest: the original of an id published again on the
	// same channel after its confirm timed out (load.on_confirm_timeout:
	// republish), matched to the id by delivery tag (rabbitmq/amqp091-go#122).
	LateConfirms int `json:"late_confirms,omitempty"`
	// LostDeadLetterPath is the class of confirmed ids delivered from
	// neither the queue nor its dead-letter queue that may have been
	// dead-lettered before the broker went down (see DeadLetterRule): lost
	// between the two queues, not from the queue itself.
	LostDeadLetterPath int `json:"lost_dead_letter_path,omitempty"`
	// DeadLetteredNacked counts, of DeadLettered, the ids the broker
	// basic.nack'd (x-overflow reject-publish-dlx refuses a publish and
	// dead-letters it).
	DeadLetteredNacked int `json:"dead_lettered_nacked,omitempty"`
	// WentNacked counts the ids a basic.nack settled at some point,
	// whatever came later: under republish: nacked-and-in-doubt a nacked id
	// is published again and may end confirmed.
	WentNacked int `json:"went_nacked,omitempty"`
	// Resurrected is the class of ids the scenario's delete-queue deleted
	// with the queue (every publish attempt made before the delete) that
	// were delivered anyway, from the queue declared again: messages
	// from the deleted queue came back (rabbitmq-server#12366). Never a
	// normal delivery: the queue they were in is gone.
	Resurrected int `json:"resurrected,omitempty"`
}

// DeadLetterRule tells a confirmed id lost on the dead-letter path from a
// plain loss, for a queue that dead-letters confirmed messages into a
// dead-letter queue rmqtorture drains. An id is lost on the dead-letter path
// when its latest publish attempt was confirmed (basic.ack), no copy of it
// was delivered from either queue, and it may have been dead-lettered while
// the broker still ran: its latest publish call + AfterPublishUS is before
// the last moment the broker was taken down (DownUS). The queue starts a
// message's TTL when it accepts the message, after the publish call, so the
// broker cannot dead-letter an id earlier than that: an id that fails the
// test was still in the queue when the broker went down, and its loss is a
// plain loss. Times are µs since the ledger's base (the history's start).
type DeadLetterRule struct {
	// AfterPublishUS is the earliest the queue dead-letters a message
	// after its publish call, in µs: x-message-ttl, or 0 when an overflow
	// (drop-head) may dead-letter it at once.
	AfterPublishUS int64 `json:"after_publish_us"`
	// DownUS are the moments the broker was taken down (a kill, stop or
	// restart took effect), in µs since the ledger's base.
	DownUS []int64 `json:"down_us"`
}

// DeadLetterRuleAt builds the rule for a queue that dead-letters a message
// afterPublish after its publish call at the earliest, for a broker taken
// down at each of down, counting from the ledger's base as publish times do.
func (l *Ledger) DeadLetterRuleAt(afterPublish time.Duration, down []time.Time) DeadLetterRule {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := DeadLetterRule{AfterPublishUS: afterPublish.Microseconds(), DownUS: []int64{}}
	for _, d := range down {
		r.DownUS = append(r.DownUS, d.Sub(l.base).Microseconds())
	}
	return r
}

// SetDeadLetterRule makes Reconcile apply r (nil: none); it needs
// KeepPublishTimes from before the burst.
func (l *Ledger) SetDeadLetterRule(r *DeadLetterRule) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dlRule = r
}

// DeadLetterRule returns the rule SetDeadLetterRule set (nil: none).
func (l *Ledger) DeadLetterRule() *DeadLetterRule {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dlRule
}

// onDeadLetterPath reports whether confirmed, undelivered seq may have been
// dead-lettered before the broker went down. The caller holds l.mu.
func (l *Ledger) onDeadLetterPath(seq int) bool {
	if l.dlRule == nil || l.pubUS == nil || len(l.dlRule.DownUS) == 0 {
		return false
	}
	return l.pubUS[seq]+l.dlRule.AfterPublishUS < slices.Max(l.dlRule.DownUS)
}

// IDSets lists the affected sequence numbers of a burst as ranges.
type IDSets struct {
	Lost []Range `json:"lost,omitempty"`
	// LostDeadLetterPath: confirmed, in neither queue, and may have been
	// dead-lettered before the broker went down (see DeadLetterRule).
	LostDeadLetterPath []Range `json:"lost_dead_letter_path,omitempty"`
	Unverified         []Range `json:"unverified,omitempty"`
	UnconfirmedMissing []Range `json:"unconfirmed_missing,omitempty"`
	InDoubt            []Range `json:"in_doubt,omitempty"`
	Nacked             []Range `json:"nacked,omitempty"`
	Returned           []Range `json:"returned,omitempty"`
	NotPublished       []Range `json:"not_published,omitempty"`
	Duplicated         []Range `json:"duplicated,omitempty"`
	// WentInDoubt lists the ids that were in doubt at some point (Counts.WentInDoubt
	// counts them), whatever came later.
	WentInDoubt []Range `json:"went_in_doubt,omitempty"`
	// Republished lists the ids published more than once (same message id):
	// under republish: in-doubt, exactly the ids of WentInDoubt that the run
	// had time to publish again (streadway/amqp#396).
	Republished []Range `json:"republished,omitempty"`
	// DeadLettered: ids found in the dead-letter queue.
	DeadLettered []Range `json:"dead_lettered,omitempty"`
	// WentNacked lists the ids a basic.nack settled at some point
	// (Counts.WentNacked counts them).
	WentNacked []Range `json:"went_nacked,omitempty"`
	// Resurrected lists the ids of the class Counts.Resurrected: deleted
	// with the queue by the scenario's delete-queue, delivered anyway.
	Resurrected []Range `json:"resurrected,omitempty"`
}

// Range is an inclusive run of sequence numbers [First, Last].
type Range struct {
	First int `json:"first"`
	Last  int `json:"last"`
}

func (r Range) String() string {
	if r.First == r.Last {
		return fmt.Sprint(r.First)
	}
	return fmt.Sprintf("%d-%d", r.First, r.Last)
}

// Len is the number of ids in the range.
func (r Range) Len() int { return r.Last - r.First + 1 }

type rangeBuilder struct{ out []Range }

func (b *rangeBuilder) add(seq int) {
	if n := len(b.out); n > 0 && b.out[n-1].Last == seq-1 {
		b.out[n-1].Last = seq
		return
	}
	b.out = append(b.out, Range{seq, seq})
}

// Reconcile classifies every sent id into exactly one class and returns the
// counts and the affected ids. drained says whether the drain completed:
// without that, an acked or handed-off id that was not delivered is
// unverified, never lost or missing. It returns an
// error (a bug in rmqtorture, never a broker finding) when the classes do not
// add up to Sent.
func (l *Ledger) Reconcile(drained bool) (Counts, IDSets, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hist.w != nil {
		l.hist.w.Write(HistoryRecord{Kind: HDrainEnd, Drained: drained})
	}
	r := reconciliation{drained: drained, c: Counts{Unexpected: l.unexpected, Redeliveries: l.redeliveries, Republished: l.republished, PublishErrors: l.pubErrors, LateConfirms: l.lateConfirms}}
	for seq, o := range l.outcome {
		if o == NotPublished {
			r.c.NotPublished++
			r.unpublished.add(seq)
		}
		if l.attempts[seq] == 0 {
			continue
		}
		if l.flags[seq]&flagPastDeadline != 0 {
			r.c.PendingAtDeadline++
		}
		r.c.Sent++
		d := l.countCopies(&r, seq)
		if l.flags[seq]&flagEverInDoubt != 0 {
			r.c.WentInDoubt++
			r.wentDoubt.add(seq)
		}
		if l.flags[seq]&flagNacked != 0 {
			r.c.WentNacked++
			r.wentNacked.add(seq)
		}
		if l.attempts[seq] > 1 {
			r.republished.add(seq)
		}
		if l.deadLetteredOf(seq) > 0 && o == Nacked {
			r.c.DeadLetteredNacked++
		}
		if l.resurrected(seq, d) {
			r.c.Resurrected++
			r.resurrected.add(seq)
			continue
		}
		r.classify(seq, o, d, o == HandedOff && l.flags[seq]&flagReturned != 0, o == Acked && d == 0 && l.onDeadLetterPath(seq))
	}
	c := r.c
	sets := IDSets{Lost: r.lost.out, LostDeadLetterPath: r.dlPath.out, Unverified: r.unverified.out, UnconfirmedMissing: r.missing.out, InDoubt: r.doubt.out,
		Nacked: r.nacked.out, Returned: r.returned.out, Duplicated: r.dup.out, NotPublished: r.unpublished.out, DeadLettered: r.deadLettered.out}
	sets.WentInDoubt, sets.Republished = r.wentDoubt.out, r.republished.out
	sets.WentNacked, sets.Resurrected = r.wentNacked.out, r.resurrected.out
	if sum := c.ClassSum(); sum != c.Sent {
		return c, sets, fmt.Errorf("ledger does not reconcile: classes add up to %d, sent %d", sum, c.Sent)
	}
	return c, sets, nil
}

// reconciliation is Reconcile's running tally: the counts and the id ranges
// of each class.
type reconciliation struct {
	drained bool // the drain completed
	c       Counts

	lost, dlPath, unverified, missing, doubt, nacked, returned, dup, unpublished, deadLettered rangeBuilder
	// wentDoubt, wentNacked and republished are the ids behind
	// Counts.WentInDoubt and Counts.WentNacked, and those published more
	// than once; resurrected is the class Counts.Resurrected.
	wentDoubt, wentNacked, republished, resurrected rangeBuilder
}

// countCopies counts the deliveries of sent id seq (work queue and
// dead-letter queue) and its extra copies into r, and returns how many
// copies were delivered in all. The caller holds l.mu.
func (l *Ledger) countCopies(r *reconciliation, seq int) int {
	c := &r.c
	// A copy found in the dead-letter queue is a delivery too: the
	// broker kept the message.
	dl := int(l.deadLetteredOf(seq))
	if dl > 0 {
		c.DeadLettered++
		r.deadLettered.add(seq)
	}
	main := int(l.deliveries[seq])
	d := main + dl
	if d > 0 {
		c.Delivered++
		c.Deliveries += d
	}
	// Copies beyond the first in the work queue, less those a consumer's
	// retries explain, and copies beyond the first in the dead-letter
	// queue, less those its parks explain (one park per chain), are
	// each the extra copies of the message. The dead-letter copy of a
	// message consumers already had is the same copy moved by the
	// broker, so one extra copy shows in both queues: count the larger.
	mainExtra := max(0, main-1)
	fromRetry := min(mainExtra, int(countOf(l.retried, seq)))
	c.RetryDeliveries += fromRetry
	dlExtra := max(0, dl-1)
	dlExtra -= min(dlExtra, max(0, int(countOf(l.parked, seq))-1))
	if extra := max(mainExtra-fromRetry, dlExtra); extra > 0 {
		c.Duplicates += extra
		c.DuplicatesFromRepublish += min(extra, int(l.attempts[seq])-1)
		r.dup.add(seq)
	}
	return d
}

// classify puts sent id seq, whose latest outcome is o, into its one class,
// given d copies delivered, whether a basic.return was seen for its latest
// attempt, and whether it may have been lost on the dead-letter path.
func (r *reconciliation) classify(seq int, o Outcome, d int, wasReturned, dlPath bool) {
	c := &r.c
	switch o {
	case Acked:
		if d > 0 {
			c.Confirmed++
		} else if !r.drained {
			c.Unverified++
			r.unverified.add(seq)
		} else if dlPath {
			c.LostDeadLetterPath++
			r.dlPath.add(seq)
		} else {
			c.Lost++
			r.lost.add(seq)
		}
	case Nacked:
		c.Nacked++
		r.nacked.add(seq)
	case ReturnedAcked:
		c.Returned++
		r.returned.add(seq)
	case InDoubt, InFlight:
		c.InDoubt++
		r.doubt.add(seq)
		if d > 0 {
			c.InDoubtDelivered++
		}
	case HandedOff:
		if wasReturned {
			c.Returned++
			r.returned.add(seq)
		} else if d == 0 && !r.drained {
			c.Unverified++
			r.unverified.add(seq)
		} else if d > 0 {
			c.UnconfirmedDelivered++
		} else {
			c.UnconfirmedMissing++
			r.missing.add(seq)
		}
	}
}

// ClassSum adds the classes that partition the sent ids.
func (c Counts) ClassSum() int {
	return c.Confirmed + c.Lost + c.LostDeadLetterPath + c.Unverified + c.Nacked + c.Returned + c.InDoubt + c.UnconfirmedDelivered + c.UnconfirmedMissing + c.Resurrected
}

// RangesLen is the number of ids in rs (sorted, disjoint, as IDs holds).
func RangesLen(rs []Range) int {
	n := 0
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// IntersectRanges returns the ids in both a and b, as sorted disjoint
// ranges; both must be sorted and disjoint, as IDs holds them.
func IntersectRanges(a, b []Range) []Range {
	var out []Range
	for i, j := 0, 0; i < len(a) && j < len(b); {
		if lo, hi := max(a[i].First, b[j].First), min(a[i].Last, b[j].Last); lo <= hi {
			out = append(out, Range{First: lo, Last: hi})
		}
		if a[i].Last < b[j].Last {
			i++
		} else {
			j++
		}
	}
	return out
}
