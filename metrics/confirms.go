package metrics

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Epoch numbers one channel in confirm mode. Delivery tags restart at 1 on
// every new channel (and on amqp091-go's automatic recovery), so a confirm is
// only meaningful together with the epoch of the channel that carried it.
type Epoch uint32

type tagKey struct {
	epoch Epoch
	tag   uint64
}

// Pending is one published, unconfirmed message.
type Pending struct {
	Seq         int
	PublishedAt time.Time
	// Attempt is the publish attempt the tag carried (1 first), when the
	// publisher reported it (SetAttempt); 0 means "the latest": a confirm
	// tracker that never sees an id published twice on one channel does
	// not need it.
	Attempt int
}

// ConfirmTracker maps (epoch, delivery tag) to the message it carried and
// guarantees that every tag settles exactly once: by basic.ack, basic.nack, or
// by being declared in doubt when its channel closes. Safe for concurrent use.
type ConfirmTracker struct {
	mu sync.Mutex
	// pending holds each open epoch's unconfirmed tags: a map keyed by the
	// delivery tag alone hashes faster than one keyed by (epoch, tag), and
	// an epoch's close or oldest tag looks at its own tags only.
	pending map[Epoch]map[uint64]Pending
	count   int // tags pending over all epochs
	closed  map[Epoch]bool
	ledger  *Ledger // nil: tags reported to no history
}

// ReportTo makes the tracker report each delivery tag it tracks or settles,
// and each closed epoch, to l's history (see Ledger.RecordTo), so the
// history can say which (epoch, delivery tag) every publish and confirm
// carried. It costs an atomic load per call while l records nothing. It
// returns t.
func (t *ConfirmTracker) ReportTo(l *Ledger) *ConfirmTracker {
	t.ledger = l
	return t
}

// NewConfirmTracker returns an empty tracker.
func NewConfirmTracker() *ConfirmTracker {
	return &ConfirmTracker{pending: map[Epoch]map[uint64]Pending{}, closed: map[Epoch]bool{}}
}

// Track registers seq as published with delivery tag tag on epoch. It returns
// false, tracking nothing, when that epoch is already closed: the publish must
// not be counted, since its channel is gone. A tag tracked twice is a bug.
func (t *ConfirmTracker) Track(epoch Epoch, tag uint64, seq int, at time.Time) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed[epoch] {
		return false, nil
	}
	tags := t.pending[epoch]
	if tags == nil {
		tags = map[uint64]Pending{}
		t.pending[epoch] = tags
	}
	if p, dup := tags[tag]; dup {
		return false, fmt.Errorf("delivery tag %d on epoch %d already carries seq %d", tag, epoch, p.Seq)
	}
	tags[tag] = Pending{Seq: seq, PublishedAt: at}
	t.count++
	if t.ledger != nil {
		t.ledger.noteTag(seq, epoch, tag, at)
	}
	return true, nil
}

// Settle removes and returns the message carried by (epoch, tag). ok is false
// when the tag is not pending: already settled, declared in doubt, or never
// published (a bogus confirm, as streadway/amqp#199 produced).
func (t *ConfirmTracker) Settle(epoch Epoch, tag uint64) (p Pending, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tags := t.pending[epoch]
	p, ok = tags[tag]
	if ok {
		delete(tags, tag)
		t.count--
		if t.ledger != nil {
			t.ledger.noteTag(p.Seq, epoch, tag, p.PublishedAt)
		}
	}
	return p, ok
}

// CloseEpoch marks epoch closed and returns every message still pending on it,
// in delivery-tag order: they are in doubt. Later Track calls on the epoch fail.
func (t *ConfirmTracker) CloseEpoch(epoch Epoch) []Pending {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed[epoch] = true
	pending := t.pending[epoch]
	delete(t.pending, epoch)
	t.count -= len(pending)
	tags := slices.Sorted(maps.Keys(pending))
	out := make([]Pending, 0, len(tags))
	for _, tag := range tags {
		out = append(out, pending[tag])
	}
	if t.ledger != nil {
		t.ledger.noteEpochClosed(epoch, len(out))
	}
	return out
}

// SetAttempt records which publish attempt of its id (epoch, tag) carries,
// so a late confirm of an earlier attempt, one published again on the same
// channel after its confirm timed out, is told from the confirm of the
// latest (Ledger.SettleAttempt). A tag not pending is ignored.
func (t *ConfirmTracker) SetAttempt(epoch Epoch, tag uint64, attempt int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p, ok := t.pending[epoch][tag]; ok {
		p.Attempt = attempt
		t.pending[epoch][tag] = p
	}
}

// InFlight is the number of pending messages over all epochs.
func (t *ConfirmTracker) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.count
}

// Oldest returns the publish time of the oldest pending message on epoch, and
// false when none is pending.
func (t *ConfirmTracker) Oldest(epoch Epoch) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var oldest time.Time
	found := false
	for _, p := range t.pending[epoch] {
		if !found || p.PublishedAt.Before(oldest) {
			oldest, found = p.PublishedAt, true
		}
	}
	return oldest, found
}

type taggedSeq struct {
	tag uint64
	seq int
}

// closeEpochTags is CloseEpoch that also returns each pending message's
// delivery tag, reporting nothing to a ledger.
func (t *ConfirmTracker) closeEpochTags(epoch Epoch) []taggedSeq {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed[epoch] = true
	pending := t.pending[epoch]
	delete(t.pending, epoch)
	t.count -= len(pending)
	var out []taggedSeq
	for tag, p := range pending {
		out = append(out, taggedSeq{tag, p.Seq})
	}
	return out
}
