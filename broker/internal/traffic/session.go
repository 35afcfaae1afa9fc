package traffic

import (
	"context"
	"errors"
	"fmt"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// Session identifies one publisher connection on the timeline: its epoch
// (the key of its delivery tags), the publisher (index+1) and which of that
// publisher's connections it is (1 for the first).
type Session struct {
	Epoch      metrics.Epoch
	Publisher  int
	Connection int
	Node       int // the cluster node the connection went to (0: a single broker)
}

// Event returns a timeline event of kind for this session, with a human
// detail; code reads the typed fields only.
func (s Session) Event(kind metrics.EventKind, detail string) metrics.Event {
	return metrics.Event{Kind: kind, Epoch: s.Epoch, Publisher: s.Publisher, Connection: s.Connection, Node: s.Node, Detail: detail}
}

// FirstConfirm records the epoch's first confirm (first-progress), once:
// done is the epoch's own flag.
func (s Session) FirstConfirm(tl *metrics.Timeline, done *bool) {
	if *done {
		return
	}
	*done = true
	e := s.Event(metrics.EvFirstProgress, fmt.Sprintf("epoch %d: first confirm", s.Epoch))
	e.Progress = metrics.ProgressConfirm
	tl.Record(e)
}

// ErrEpochOver ends one connection's share of the burst: its channel closed,
// a confirm timed out, or a publish failed.
var ErrEpochOver = errors.New("publisher connection lost")

// Tracked is what a publisher does once it has tried to track seq under
// its delivery tag (or publishing id) before publishing it, holding one of
// slots: a bookkeeping error stops the burst rather than miscount; an
// epoch that closed meanwhile (not tracked) frees the slot and puts seq
// back (putBack), ending the epoch with ErrEpochOver. nil: publish seq.
func Tracked(tracked bool, err error, slots <-chan struct{}, putBack func(int), seq int) error {
	if err != nil {
		return err // a bookkeeping bug: stop rather than miscount
	}
	if !tracked { // the channel closed meanwhile
		<-slots
		putBack(seq)
		return ErrEpochOver
	}
	return nil
}

// Await waits for a settlement (wake, taken before checking the state it
// guards): nil then; ErrEpochOver when the epoch ends first (over closed);
// ctx's error when ctx ends first.
func Await(ctx context.Context, wake, over <-chan struct{}) error {
	select {
	case <-wake:
		return nil
	case <-over:
		return ErrEpochOver
	case <-ctx.Done():
		return ctx.Err()
	}
}
