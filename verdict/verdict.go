// Package verdict is the one conclude step of rmqtorture: a burst's
// evidence (everything the judge is given beside the ledger) and its
// ledger go in, reconciled counts, id ranges and a verdict come out. A run
// (engine), `rmqtorture check` re-judging a recorded history, and check's
// merge of a split run's load parts all conclude through Conclude, so they
// cannot judge one burst two ways.
//
// The evidence is also what a history carries beside its records: its
// Header part is written in the history's header and its Trailer part in
// the trailer, beside the codec's own fields (metrics.HistoryHeader,
// metrics.HistoryTrailer), so the engine writes the very record check
// reads back.
//
// To add a judged property: add its field to scenario.Observed (or
// scenario.Conditions) with its JSON name, and its check to the judge's
// table (scenario/judge.go); the engine sets the field where it measures
// it. Nothing here changes.
package verdict

import (
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// Header is the evidence known when a burst starts: its mode and the
// scenario's expectations. JSON names are those of the history's header.
type Header struct {
	Mode   scenario.Mode   `json:"mode"`
	Expect scenario.Expect `json:"expect"`
}

// Trailer is the evidence known once the burst ended: whether the drain
// completed, the conditions the burst ran under and what it observed.
// JSON names are those of the history's trailer.
type Trailer struct {
	// Drained: the drain reached the end of the queue, so a confirmed id
	// it did not see is lost, not unverified.
	Drained bool `json:"drained"`
	scenario.Conditions
	scenario.Observed
}

// Evidence is everything the judge is given beside the ledger.
type Evidence struct {
	Header
	Trailer
	// Unaccounted counts the ids of a split run's load parts whose history
	// is missing (Split): never seen published, so neither sent nor unsent.
	// Never recorded in a history.
	Unaccounted int `json:"-"`
}

// Conclude reconciles ledger into res (Counts, IDs; Mode from ev) and
// judges it into res.Verdict. amend, when set, runs between the two, for
// what the evidence can only say once the counts are known (a loss the
// scenario's own delete-queue explains is allowed): it may change ev and
// res. Conclude records in ev what reconciliation found (ReconcileErr,
// Unsent), so ev is then the record of everything the verdict came from,
// as a history's trailer keeps it.
//
// It is the only caller of Ledger.Reconcile and the judge
// (scenario.JudgeChecks) outside tests; res.Checks keeps each check's
// outcome for the run's JUnit report.
func Conclude(res *scenario.ModeResult, ledger *metrics.Ledger, ev *Evidence, amend func(*Evidence)) {
	counts, ids, err := ledger.Reconcile(ev.Drained)
	res.Mode, res.Counts, res.IDs = ev.Mode, counts, ids
	if amend != nil {
		amend(ev)
	}
	ev.ReconcileErr = scenario.Failure{Err: err}
	// Not published by its deadline is an outcome, not a gap.
	ev.Unsent = ledger.Size() - counts.Sent - counts.NotPublished - ev.Unaccounted
	res.Checks = scenario.JudgeChecks(ev.Mode, counts, ev.Observed, ev.Expect, ev.Conditions)
	res.Verdict = scenario.VerdictOf(res.Checks)
}
