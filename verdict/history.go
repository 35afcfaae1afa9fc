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
