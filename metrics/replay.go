package metrics

import (
	"errors"
	"fmt"
	"io"
)

// Replay is a ledger rebuilt from a history alone.
type Replay struct {
	Header  HistoryHeader
	Trailer HistoryTrailer
	// HeaderJSON and TrailerJSON are the header and trailer as written,
	// for the fields the writer's caller put beside the codec's.
	HeaderJSON, TrailerJSON []byte
	Ledger                  *Ledger
	// Drained is the drain outcome of the last drain-end record (false when
	// there is none).
	Drained bool
	// Records is the number of records read.
	Records int64
	// Skipped counts the deliveries the skip function of
	// ReplayHistoryInto set aside.
	Skipped int
	// Inconsistencies are events the history itself contradicts: a confirm
	// for a delivery tag never published on its epoch or for a closed
	// epoch, a tag published twice, an attempt number that does not follow,
	// a confirm of an id not in flight. Each is one sentence.
	Inconsistencies []string
}

// MaxMessages bounds a burst's orders (scenario load.messages): the ledger
// holds ~16 bytes per order, so a history's header claiming more is refused
// before any is allocated.
const MaxMessages = 10_000_000

// maxInconsistencies bounds the sentences kept; the rest are counted.
const maxInconsistencies = 20

type replayer struct {
	*Replay
	tracker *ConfirmTracker
	closed  map[Epoch]*closedEpoch
	extra   int // inconsistencies beyond maxInconsistencies
}

// closedEpoch is a channel the history closed: the tags it said were
// pending, and those the checker still had pending (a publish call that
// failed as its channel closed settles its tag just before the close).
type closedEpoch struct {
	pending int
	left    map[uint64]int // tag → seq
}

// ReplayHistory reads every record of r into a fresh ledger, resolving
// delivery tags per epoch with its own ConfirmTracker. Errors (wrapping
// ErrHistoryCorrupt) mean the history cannot be read: truncated, corrupt, a
// sequence number out of range; events it reads but contradict each other
// are Inconsistencies.
func ReplayHistory(r *HistoryReader) (*Replay, error) {
	return ReplayHistoryInto(r, nil, nil)
}

// ReplayHistoryInto is ReplayHistory into l (nil: a fresh ledger sized by
// the header), so that the histories of a run's load parts and its drain
// build one ledger: each is replayed in turn with its own confirm tracker
// (epochs and delivery tags are a process's own), parts before the drain.
// l must have the header's prefix and size (an error otherwise). A load
// part's publish outside its header's range [First, End) is an
// inconsistency. skip, when set, sets aside the deliveries (HDelivered,
// HDeadLettered) of the sequence numbers it names, counted in Skipped:
// the ids of a load part whose history is missing were published by it,
// not unexpected.
func ReplayHistoryInto(r *HistoryReader, l *Ledger, skip func(seq int) bool) (*Replay, error) {
	h := r.Header
	if h.Messages < 0 || h.Messages > MaxMessages {
		return nil, corrupt("header: %d messages", h.Messages)
	}
	if l == nil {
		l = NewLedger(h.Prefix, h.Messages)
		// Publish times count from the history's start, as the run's
		// ledger counted them, for the trailer's dead-letter rule.
		l.base = h.Start
		l.KeepPublishTimes()
	} else if l.prefix != h.Prefix || l.Size() != h.Messages {
		return nil, fmt.Errorf("history of %d ids %s…, not the %d ids %s… it is merged with", h.Messages, h.Prefix, l.Size(), l.prefix)
	}
	p := &replayer{Replay: &Replay{Header: h, HeaderJSON: r.HeaderJSON, Ledger: l},
		tracker: NewConfirmTracker(), closed: map[Epoch]*closedEpoch{}}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		p.Records++
		if skip != nil && (rec.Kind == HDelivered || rec.Kind == HDeadLettered) && skip(rec.Seq) {
			p.Skipped++
			continue
		}
		if err := p.apply(rec); err != nil {
			return nil, fmt.Errorf("%w: record %d (%s): %v", ErrHistoryCorrupt, p.Records-1, rec.Kind, err)
		}
	}
	p.Trailer, p.TrailerJSON = r.Trailer(), r.TrailerJSON()
	p.Ledger.SetDeadLetterRule(p.Trailer.DeadLetterRule)
	for e, c := range p.closed {
		if len(c.left) != c.pending {
			p.inconsistent("epoch %d closed with %d delivery tags pending, but %d were never confirmed", e, c.pending, len(c.left))
		}
	}
	if p.extra > 0 {
		p.Inconsistencies = append(p.Inconsistencies, fmt.Sprintf("and %d more inconsistencies", p.extra))
	}
	return p.Replay, nil
}

func (p *replayer) inconsistent(format string, args ...any) {
	if len(p.Inconsistencies) >= maxInconsistencies {
		p.extra++
		return
	}
	p.Inconsistencies = append(p.Inconsistencies, fmt.Sprintf(format, args...))
}

// apply replays one record into the ledger through the same method the run
// called.
func (p *replayer) apply(rec HistoryRecord) error {
	l := p.Ledger
	switch rec.Kind {
	case HUnexpected:
		if rec.DeadLetter {
			l.DeadLettered(rec.ID)
		} else {
			l.DeliveredAttempt(rec.ID, rec.Redelivered, rec.Attempt)
		}
		return nil
	case HAck, HNack:
		p.confirm(rec)
		return nil
	case HEpochClosed:
		c := &closedEpoch{pending: rec.Pending, left: map[uint64]int{}}
		for _, pend := range p.tracker.closeEpochTags(rec.Epoch) {
			c.left[pend.tag] = pend.seq
		}
		p.closed[rec.Epoch] = c
		return nil
	case HDrainEnd:
		p.Drained = rec.Drained
		return nil
	case HQueueDeleted:
		l.QueueDeleted(rec.BurstOver)
		return nil
	}
	if rec.Seq < 0 || rec.Seq >= l.Size() {
		return fmt.Errorf("sequence number %d outside 0..%d", rec.Seq, l.Size()-1)
	}
	id := l.MessageID(rec.Seq)
	switch rec.Kind {
	case HPublish:
		if pt := p.Header.Part; pt != nil && !pt.Drain && (rec.Seq < pt.First || rec.Seq >= pt.End) {
			p.inconsistent("%s published %s, outside its ids %d–%d", pt, id, pt.First, pt.End-1)
		}
		p.publish(rec)
	case HAckSeq, HNackSeq:
		if err := l.Settle(rec.Seq, rec.Kind == HAckSeq); err != nil {
			p.inconsistent("%v", err)
		}
	case HReturned:
		l.Returned(rec.Seq)
	case HPublishFailed:
		p.publishFailed(rec)
	case HInDoubt:
		l.MarkInDoubt(rec.Seq)
	case HDelivered:
		l.DeliveredAttempt(id, rec.Redelivered, rec.Attempt)
	case HDeadLettered:
		l.DeadLettered(id)
	case HRetried:
		l.Retried(id)
	case HParked:
		l.Parked(id)
	case HNotPublished:
		l.MarkNotPublished(rec.Seq)
	case HPastDeadline:
		l.MarkPastDeadline(rec.Seq)
	}
	return nil
}

func (p *replayer) publish(rec HistoryRecord) {
	confirm := p.Header.ConfirmMode
	if confirm && rec.Epoch != 0 {
		ok, err := p.tracker.Track(rec.Epoch, rec.Tag, rec.Seq, rec.Time)
		switch {
		case err != nil:
			p.inconsistent("publish of %s: %v", p.Ledger.MessageID(rec.Seq), err)
		case !ok:
			p.inconsistent("publish of %s with delivery tag %d on epoch %d, already closed", p.Ledger.MessageID(rec.Seq), rec.Tag, rec.Epoch)
		}
	}
	if got := p.Ledger.publishedAt(rec.Seq, confirm, rec.Time); got != rec.Attempt {
		p.inconsistent("publish of %s recorded as attempt %d, but it is attempt %d", p.Ledger.MessageID(rec.Seq), rec.Attempt, got)
	}
	if confirm && rec.Epoch != 0 {
		p.tracker.SetAttempt(rec.Epoch, rec.Tag, rec.Attempt)
	}
}

func (p *replayer) confirm(rec HistoryRecord) {
	what := "basic.ack"
	if rec.Kind == HNack {
		what = "basic.nack"
	}
	pend, ok := p.tracker.Settle(rec.Epoch, rec.Tag)
	if !ok {
		if _, closed := p.closed[rec.Epoch]; closed {
			p.inconsistent("%s for delivery tag %d on epoch %d, which was already closed", what, rec.Tag, rec.Epoch)
		} else {
			p.inconsistent("%s for delivery tag %d on epoch %d, which carries no unconfirmed publish", what, rec.Tag, rec.Epoch)
		}
		return
	}
	if _, err := p.Ledger.SettleAttempt(pend.Seq, pend.Attempt, rec.Kind == HAck); err != nil {
		p.inconsistent("%s for delivery tag %d on epoch %d: %v", what, rec.Tag, rec.Epoch, err)
	}
}

// publishFailed releases the attempt's tag (pending, or left pending by a
// close recorded just before) and records the failure.
func (p *replayer) publishFailed(rec HistoryRecord) {
	confirm := p.Header.ConfirmMode
	if confirm && rec.Epoch != 0 {
		seq, ok := -1, false
		if pend, found := p.tracker.Settle(rec.Epoch, rec.Tag); found {
			seq, ok = pend.Seq, true
		} else if c := p.closed[rec.Epoch]; c != nil {
			seq, ok = c.left[rec.Tag]
			delete(c.left, rec.Tag)
		}
		if !ok || seq != rec.Seq {
			p.inconsistent("failed publish of %s names delivery tag %d on epoch %d, which does not carry it", p.Ledger.MessageID(rec.Seq), rec.Tag, rec.Epoch)
		}
	}
	p.Ledger.PublishFailed(rec.Seq, confirm)
}
