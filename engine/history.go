package engine

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/redact"
	"github.com/rmqtorture/rmqtorture/scenario"
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
// first. A failure is logged and the burst runs without a history.
func (r *Runner) openHistory(s *scenario.Scenario, m scenario.Mode, res *scenario.ModeResult, ledger *metrics.Ledger) *burstHistory {
	if r.History == nil {
		return nil
	}
	idx := r.histories
	r.histories++
	fail := func(err error) *burstHistory {
		r.Log.Warn("history not recorded", "mode", m, "err", err)
		res.History = ""
		return nil
	}
	expect, err := json.Marshal(s.Expect)
	if err != nil {
		return fail(err)
	}
	out, err := r.History(idx, res)
	if err != nil {
		return fail(err)
	}
	w, err := metrics.NewHistoryWriter(out, metrics.HistoryHeader{Mode: string(m), Prefix: res.Queue + "-",
		Messages: s.Load.Messages, ConfirmMode: m.ConfirmMode(), Start: time.Now(), Expect: expect, Part: r.partHeader()})
	if err != nil {
		_ = out.Close()
		return fail(err)
	}
	ledger.RecordTo(w)
	return &burstHistory{out: out, w: w, ledger: ledger, log: r.Log}
}

// finish writes the trailer (what Judge was given beside the ledger) and
// closes the history; the ledger must be reconciled already. A failure drops
// res.History: a result never cites a history that cannot be read.
func (h *burstHistory) finish(res *scenario.ModeResult, cond scenario.Conditions, drained bool) {
	if h == nil {
		return
	}
	h.ledger.RecordTo(nil)
	t := metrics.HistoryTrailer{Drained: drained, Unsent: cond.Unsent, Interrupted: cond.Interrupted,
		ReconcileErr: errText(cond.ReconcileErr), PublishErr: errText(cond.PublishErr), BrokerNotBack: errText(cond.BrokerNotBack),
		FaultMissed: errText(cond.FaultMissed), DrainIncomplete: errText(cond.DrainIncomplete),
		BlockedMS: res.BlockedMS, ChannelCloses: res.ChannelCloses, LostAllowed: res.LostAllowed,
		DeadLetterRule: h.ledger.DeadLetterRule(), DeadLetterLossAllowed: res.DeadLetterLossAllowed, DeadLetterGuarantee: res.DeadLetterGuarantee,
		FalseAcks: falseAcks(res.Faults), AssertionsFailed: AssertionsFailed(res.Faults), DeadLetterReasons: res.DeadLetterReasons}
	var err error
	if res.Consumers != nil {
		t.Consumers, err = json.Marshal(res.Consumers)
	}
	if err == nil {
		err = h.w.Close(t)
	}
	err = errors.Join(err, h.out.Close())
	if err != nil {
		h.log.Warn("history not written", "mode", res.Mode, "err", err)
		res.History = ""
	}
}

// errText is an error's text as the history stores it: without URL
// passwords or terminal codes, as result.json has it (so check's re-judged
// reasons match).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return redact.Foreign(err.Error())
}
