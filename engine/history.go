package engine

import (
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// HistorySink opens where the history of a burst goes: index counts the
// bursts a Runner ran, from 0 (it equals the burst's position in the run's
// results, since nothing runs after a burst is skipped). It may set
// res.History to the name the result should cite.
type HistorySink func(index int, res *scenario.ModeResult) (io.WriteCloser, error)

// burstHistory is one burst's history being recorded; nil records nothing.
type burstHistory struct {
	out    io.WriteCloser
	w      *metrics.HistoryWriter
	ledger *metrics.Ledger
	log    *slog.Logger
}

// openHistory starts recording ledger into r.History's writer, header
// first: the codec's fields and the evidence known at the start. A
// failure is logged and the burst runs without a history.
func (r *Runner) openHistory(s *scenario.Scenario, ev verdict.Header, res *scenario.ModeResult, ledger *metrics.Ledger) *burstHistory {
	if r.History == nil {
		return nil
	}
	idx := r.histories
	r.histories++
	fail := func(err error) *burstHistory {
		r.Log.Warn("history not recorded", "mode", ev.Mode, "err", err)
		res.History = ""
		return nil
	}
	out, err := r.History(idx, res)
	if err != nil {
		return fail(err)
	}
	w, err := verdict.NewHistoryWriter(out, metrics.HistoryHeader{Prefix: res.Queue + "-", Messages: s.Load.Messages,
		ConfirmMode: ev.Mode.ConfirmMode(), Start: time.Now(), Part: r.partHeader()}, ev)
	if err != nil {
		_ = out.Close()
		return fail(err)
	}
	ledger.RecordTo(w)
	return &burstHistory{out: out, w: w, ledger: ledger, log: r.Log}
}

// finish writes the trailer (the evidence Conclude judged the burst on)
// and closes the history; the burst must be concluded already. A failure
// drops res.History: a result never cites a history that cannot be read.
func (h *burstHistory) finish(res *scenario.ModeResult, ev verdict.Trailer) {
	if h == nil {
		return
	}
	h.ledger.RecordTo(nil)
	err := verdict.CloseHistory(h.w, h.ledger, ev)
	err = errors.Join(err, h.out.Close())
	if err != nil {
		h.log.Warn("history not written", "mode", res.Mode, "err", err)
		res.History = ""
	}
}
