package engine

import (
	"fmt"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A delete-queue or purge-queue step removes messages on purpose, so the
// confirmed ids it removed are never delivered: the ledger counts them as
// lost, which would read as broken durability. They are the scenario's own
// doing, and the ids are known: an id can only have been removed if it was
// first published before the step returned (anything published later found
// the queue empty, or gone and came back as basic.return). This file splits
// lost along that line, so a loss the scenario did not cause still fails.

// quorumDeleteCount says why a quorum queue's delete count bounds nothing:
// RabbitMQ reads it from the queue's leader with a 250 ms timeout before it
// deletes the queue, and answers 0 when the read times out or fails
// (deps/rabbit/src/rabbit_quorum_queue.erl, delete/4 and stat/2), so under
// load it reported 0 for a queue holding hundreds of confirmed messages.
const quorumDeleteCount = "a quorum queue's count is read with a 250 ms timeout and is 0 when that read times out, so it bounds nothing"

// publishedIDs lists, as ranges, the ids the ledger has seen a publish
// attempt of.
func publishedIDs(l *metrics.Ledger) []metrics.Range {
	var out []metrics.Range
	for seq := range l.Size() {
		if o := l.Outcome(seq); o == metrics.NotSent || o == metrics.NotPublished {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Last == seq-1 {
			out[n-1].Last = seq
		} else {
			out = append(out, metrics.Range{First: seq, Last: seq})
		}
	}
	return out
}

// removalSteps is the set of ids any removal step could have removed (the
// union of their PublishedBefore) and the steps' actions and reported
// counts, in words. budget is -1 (no bound) when a step's count bounds
// nothing: a quorum queue's queue.delete-ok count (see quorumDeleteCount).
func removalSteps(faults []scenario.FaultRecord, quorum bool) (could func(seq int) bool, what string, budget int) {
	var sets [][]metrics.Range
	var parts []string
	unbounded := false
	for _, f := range faults {
		if !f.Action.RemovesMessages() || f.RemovedMessages == nil {
			continue
		}
		sets = append(sets, f.PublishedBefore)
		// What the broker said it removed, plus the ids published while the
		// step's call was under way (acks for messages routed to a queue
		// being deleted, rabbitmq-server#1877): no more lost ids can be the
		// step's doing.
		if spec, _ := f.Action.Spec(); quorum && spec.DeletesQueue {
			unbounded = true
			parts = append(parts, fmt.Sprintf("%s (the broker reported %d messages removed: %s)", f.Action, *f.RemovedMessages, quorumDeleteCount))
			continue
		}
		budget += *f.RemovedMessages + max(0, rangeLen(f.PublishedBefore)-f.AtPublished)
		parts = append(parts, fmt.Sprintf("%s (the broker reported %d messages removed)", f.Action, *f.RemovedMessages))
	}
	if unbounded {
		budget = -1
	}
	could = func(seq int) bool {
		for _, rs := range sets {
			for _, r := range rs {
				if seq >= r.First && seq <= r.Last {
					return true
				}
			}
		}
		return false
	}
	return could, strings.Join(parts, ", "), budget
}

// rangeLen counts the ids of rs.
func rangeLen(rs []metrics.Range) int {
	n := 0
	for _, r := range rs {
		n += r.Len()
	}
	return n
}

// countIn counts the ids of rs for which in holds.
func countIn(rs []metrics.Range, in func(int) bool) int {
	n := 0
	for _, r := range rs {
		for seq := r.First; seq <= r.Last; seq++ {
			if in(seq) {
				n++
			}
		}
	}
	return n
}

// explainRemoved sets res.RemovedByScenario to the lost ids the scenario's
// own delete-queue or purge-queue steps removed, allows the loss when they
// explain all of it (all reports true), and says so in a note; for
// fire-and-forget it notes how many of the missing ids the steps could have
// removed. quorum says the queue is a quorum queue, whose delete count
// bounds nothing (quorumDeleteCount). Call it before judging.
func explainRemoved(res *scenario.ModeResult, quorum bool) (all bool) {
	could, what, budget := removalSteps(res.Faults, quorum)
	if what == "" {
		return false
	}
	if missing := countIn(res.IDs.UnconfirmedMissing, could); missing > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d of the %d unconfirmed missing ids were published before the scenario's own %s returned", missing, res.UnconfirmedMissing, what))
	}
	res.RemovedByScenario = countIn(res.IDs.Lost, could)
	switch {
	case res.RemovedByScenario == 0:
	case budget >= 0 && res.RemovedByScenario > budget:
		// More lost ids than the steps can have removed: another fault (or
		// the broker) lost the rest, so none of it is excused.
		res.Notes = append(res.Notes, fmt.Sprintf("%d lost confirmed messages were published before the scenario's own %s returned, but it can account for at most %d of them (what the broker reported removed, plus the ids published during its call): durability loss", res.RemovedByScenario, what, budget))
		res.RemovedByScenario = 0
		return false
	case res.RemovedByScenario == res.Lost:
		res.LostAllowed = true // so check, re-judging from the history's trailer, agrees
		res.Notes = append(res.Notes, fmt.Sprintf("%d confirmed messages were removed by the scenario's own %s: published before it returned and never delivered; counted as lost, allowed: not durability loss", res.RemovedByScenario, what))
	default:
		res.Notes = append(res.Notes, fmt.Sprintf("%d of the %d lost confirmed messages were removed by the scenario's own %s; the other %d were published after it returned: durability loss", res.RemovedByScenario, res.Lost, what, res.Lost-res.RemovedByScenario))
	}
	return res.RemovedByScenario > 0 && res.RemovedByScenario == res.Lost
}
