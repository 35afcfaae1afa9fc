package verdict

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// The history keeps the evidence as metrics' codec writes any caller's
// fields: beside its own, in one JSON object for the header and one for the
// trailer. The names are those histories have always had (a history
// written before this package still reads): the header holds mode and
// expect, the trailer drained, the conditions (reconcile_error, unsent,
// interrupted, publish_error, broker_not_back, fault_missed,
// drain_incomplete; each error as its redacted text) and the observations
// (blocked_ms, channel_closes, lost_allowed, consumers, …).

// NewHistoryWriter starts a burst's history on w: metrics' codec header h
// with the evidence known at the start beside it.
func NewHistoryWriter(w io.Writer, h metrics.HistoryHeader, ev Header) (*metrics.HistoryWriter, error) {
	return metrics.NewHistoryWriter(w, h, ev)
}

// CloseHistory ends the history w with the evidence's trailer beside the
// dead-letter rule ledger applied (Conclude has run), and flushes it.
func CloseHistory(w *metrics.HistoryWriter, ledger *metrics.Ledger, ev Trailer) error {
	return w.Close(metrics.HistoryTrailer{DeadLetterRule: ledger.DeadLetterRule()}, ev)
}

// FromReplay is the evidence a replayed history recorded. Drained is the
// replay's: the drain-end record the ledger wrote when the run reconciled
// it, which the trailer repeats. Errors wrap metrics.ErrHistoryCorrupt.
func FromReplay(rp *metrics.Replay) (Evidence, error) {
	var ev Evidence
	if err := json.Unmarshal(rp.HeaderJSON, &ev.Header); err != nil {
		return ev, fmt.Errorf("%w: header: %v", metrics.ErrHistoryCorrupt, err)
	}
	if err := json.Unmarshal(rp.TrailerJSON, &ev.Trailer); err != nil {
		return ev, fmt.Errorf("%w: trailer: %v", metrics.ErrHistoryCorrupt, err)
	}
	ev.Drained = rp.Drained
	return ev, nil
}

// Recheck re-judges a replayed history as its run judged it: the evidence
// it recorded and its rebuilt ledger, through Conclude.
func Recheck(rp *metrics.Replay) (scenario.ModeResult, error) {
	ev, err := FromReplay(rp)
	if err != nil {
		return scenario.ModeResult{}, err
	}
	var res scenario.ModeResult
	Conclude(&res, rp.Ledger, &ev, nil)
	return res, nil
}

// readHistory reads the header of the history on r. It must hold a burst
// of messages ids, as the run's result.json says: the ledger is sized by
// the header, and a few bytes claiming a billion ids would cost
// gigabytes. part, when set, is the share of a split run result.json
// names for the history, which its header must record too.
func readHistory(r io.Reader, messages int, part *metrics.Part) (*metrics.HistoryReader, error) {
	hr, err := metrics.NewHistoryReader(r)
	if err != nil {
		return nil, err
	}
	if hr.Header.Messages != messages {
		return nil, fmt.Errorf("its header holds a burst of %d ids, result.json says messages: %d", hr.Header.Messages, messages)
	}
	if h := hr.Header.Part; part != nil && (h == nil || *h != *part) {
		return nil, fmt.Errorf("the history's part (%v) is not the one result.json names (%v)", h, part)
	}
	return hr, nil
}

// RecheckHistory re-judges the history read from r, of a burst of
// messages ids (result.json's load.messages), as its run judged it (see
// Recheck). It returns the re-judged result and the history's
// inconsistencies: records that contradict each other, in the replay's
// words. Errors: a header of another burst size, and a history that
// cannot be read (wrapping metrics.ErrHistoryCorrupt when it is corrupt).
func RecheckHistory(r io.Reader, messages int) (scenario.ModeResult, []string, error) {
	hr, err := readHistory(r, messages, nil)
	if err != nil {
		return scenario.ModeResult{}, nil, err
	}
	rp, err := metrics.ReplayHistory(hr)
	if err != nil {
		return scenario.ModeResult{}, nil, err
	}
	res, err := Recheck(rp)
	return res, rp.Inconsistencies, err
}
