package metrics

import (
	"sync/atomic"
	"time"
)

// tagRef is the delivery tag a confirm tracker reported for a sequence
// number, kept until the ledger records the event it belongs to.
type tagRef struct {
	epoch Epoch
	tag   uint64
	at    time.Time
}

// ledgerHistory is the ledger's optional history sink. Its methods run with
// the ledger locked, so records are written in the order the ledger changed.
type ledgerHistory struct {
	w    *HistoryWriter // nil: not recording
	on   atomic.Bool    // w != nil, for the confirm tracker's lock-free check
	tags map[int]tagRef // seq → tag reported by the tracker, not yet recorded
}

// RecordTo makes the ledger (and every confirm tracker that reports to it,
// see ConfirmTracker.ReportTo) write each event into w as it happens; nil
// stops recording. The ledger never closes w.
func (l *Ledger) RecordTo(w *HistoryWriter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.hist.w = w
	l.hist.on.Store(w != nil)
	l.hist.tags = nil
	if w != nil {
		l.hist.tags = map[int]tagRef{}
		// Publish times count from the history's start, as the history
		// writes them.
		l.base = w.start
	}
}

// noteTag keeps the delivery tag of seq's publish or confirm for the ledger
// event that follows (Published, Settle, PublishFailed).
func (l *Ledger) noteTag(seq int, epoch Epoch, tag uint64, at time.Time) {
	if !l.hist.on.Load() {
		return
	}
	l.mu.Lock()
	if l.hist.w != nil {
		l.hist.tags[seq] = tagRef{epoch, tag, at}
	}
	l.mu.Unlock()
}

// noteEpochClosed records that epoch closed with pending tags unconfirmed.
func (l *Ledger) noteEpochClosed(epoch Epoch, pending int) {
	if !l.hist.on.Load() {
		return
	}
	l.mu.Lock()
	if l.hist.w != nil {
		l.hist.w.Write(HistoryRecord{Kind: HEpochClosed, Epoch: epoch, Pending: pending})
	}
	l.mu.Unlock()
}

func (h *ledgerHistory) pop(seq int) (tagRef, bool) {
	t, ok := h.tags[seq]
	if ok {
		delete(h.tags, seq)
	}
	return t, ok
}

// publish records attempt of seq with its delivery tag and publish time t.
func (h *ledgerHistory) publish(seq, attempt int, t tagRef) {
	h.w.Write(HistoryRecord{Kind: HPublish, Seq: seq, Attempt: attempt, Epoch: t.epoch, Tag: t.tag, Time: t.at})
}

func (h *ledgerHistory) seqTagged(kind HistoryKind, seq int) {
	t, _ := h.pop(seq)
	h.w.Write(HistoryRecord{Kind: kind, Seq: seq, Epoch: t.epoch, Tag: t.tag})
}

func (h *ledgerHistory) settle(seq int, ack bool) {
	t, ok := h.pop(seq)
	switch {
	case ok && ack:
		h.w.Write(HistoryRecord{Kind: HAck, Epoch: t.epoch, Tag: t.tag})
	case ok:
		h.w.Write(HistoryRecord{Kind: HNack, Epoch: t.epoch, Tag: t.tag})
	case ack:
		h.w.Write(HistoryRecord{Kind: HAckSeq, Seq: seq})
	default:
		h.w.Write(HistoryRecord{Kind: HNackSeq, Seq: seq})
	}
}

func (h *ledgerHistory) seq(kind HistoryKind, seq int) {
	h.w.Write(HistoryRecord{Kind: kind, Seq: seq})
}

// delivery records rec (HDelivered or HDeadLettered) of id; an id no
// sequence number spells is recorded as HUnexpected with the id.
func (h *ledgerHistory) delivery(rec HistoryRecord, id string, seq int, ok bool) {
	if ok {
		rec.Seq = seq
	} else {
		rec.DeadLetter = rec.Kind == HDeadLettered
		rec.Kind = HUnexpected
		rec.ID = id[:min(len(id), maxHistoryID)]
	}
	h.w.Write(rec)
}
