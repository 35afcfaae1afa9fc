package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// Conditions are facts about how a burst went that decide whether its numbers
// can be trusted at all.
type Conditions struct {
	ReconcileErr    error // the ledger did not add up (an rmqtorture bug)
	BrokerNotBack   error // the broker did not accept AMQP again within its deadline
	PublishErr      error // the publisher gave up (reconnect deadline) before the burst was done
	DrainIncomplete error // the drain hit its deadline or failed
	FaultMissed     error // a planned fault never fired
	Interrupted     bool  // Ctrl-C
	Unsent          int   // orders never published
}

// Observed is what a burst measured beside the ledger that expectations can check.
type Observed struct {
	BlockedMS     float64
	ChannelCloses []string
	// LostAllowed: the messages or the queue were not durable, or the queue
	// discards messages by design, so a confirmed message that is gone is
	// counted but fails nothing.
	LostAllowed bool
	// Consumers is what live consumers measured (nil without them).
	Consumers *ConsumerStats
}

// onlyValue checks that histogram h (value → messages) holds exactly one
// value, want, and describes it otherwise.
func onlyValue(name string, h map[string]int, want int) string {
	if len(h) == 1 {
		if _, ok := h[fmt.Sprint(want)]; ok {
			return ""
		}
	}
	keys := slices.Sorted(maps.Keys(h))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, h[k])
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return fmt.Sprintf("%s: expected every message at exactly %d, got %s (value×messages)", name, want, strings.Join(parts, ", "))
}

// Judge turns a reconciled burst into a verdict. It is pure. A confirmed
// message that was never delivered and a delivery of an id never published
// always fail; the scenario's expectations add limits. Fail outranks
// inconclusive: a measured loss is a finding even when the run was cut short.
func Judge(mode Mode, c metrics.Counts, obs Observed, e Expect, cond Conditions) Verdict {
	var fails, doubts []string
	if c.Lost > 0 && obs.LostAllowed {
		// Reported in the ledger; a basic.ack of a transient message or of a
		// non-durable queue never promised disk.
	} else if c.Lost > 0 {
		fails = append(fails, fmt.Sprintf("%d confirmed messages lost: basic.ack received, never delivered", c.Lost))
	}
	if c.Unexpected > 0 {
		fails = append(fails, fmt.Sprintf("%d unexpected deliveries: ids this run never published (stale queue or bug)", c.Unexpected))
	}
	limit := func(name string, got int, max *int) {
		if max != nil && got > *max {
			fails = append(fails, fmt.Sprintf("%s %d exceeds expect.max_%s %d", name, got, name, *max))
		}
	}
	limit("unconfirmed_missing", c.UnconfirmedMissing, e.MaxUnconfirmedMissing)
	limit("in_doubt", c.InDoubt, e.MaxInDoubt)
	limit("duplicates", c.Duplicates, e.MaxDuplicates)
	limit("nacked", c.Nacked, e.MaxNacked)
	limit("returned", c.Returned, e.MaxReturned)
	if ex, ok := e.Modes[mode]; ok {
		got := map[string]int{
			"sent": c.Sent, "confirmed": c.Confirmed, "lost": c.Lost, "nacked": c.Nacked, "returned": c.Returned,
			"in_doubt": c.InDoubt, "delivered": c.Delivered, "unconfirmed_delivered": c.UnconfirmedDelivered,
			"unconfirmed_missing": c.UnconfirmedMissing, "duplicates": c.Duplicates,
			"not_published": c.NotPublished, "pending_at_deadline": c.PendingAtDeadline,
			"dead_lettered": c.DeadLettered,
		}
		for _, f := range ex.fields() {
			switch {
			case f.v == nil:
			case f.name == "min_went_in_doubt":
				if c.WentInDoubt < *f.v {
					fails = append(fails, fmt.Sprintf("went_in_doubt %d, expected at least %d: the fault did not leave messages in doubt", c.WentInDoubt, *f.v))
				}
			case f.name == "min_blocked_ms":
				if obs.BlockedMS < float64(*f.v) {
					fails = append(fails, fmt.Sprintf("blocked %.0f ms, expected at least %d ms of connection.blocked", obs.BlockedMS, *f.v))
				}
			case f.name == "min_redeliveries":
				if c.Redeliveries < *f.v {
					fails = append(fails, fmt.Sprintf("redeliveries %d, expected at least %d", c.Redeliveries, *f.v))
				}
			case f.name == "deliveries_per_message" || f.name == "retries":
				if obs.Consumers == nil {
					fails = append(fails, fmt.Sprintf("%s: no live consumers measured it", f.name))
					break
				}
				h := obs.Consumers.DeliveriesPerMessage
				if f.name == "retries" {
					h = obs.Consumers.RetriesAtPark
				}
				if msg := onlyValue(f.name, h, *f.v); msg != "" {
					fails = append(fails, msg)
				}
			case f.name == "min_unconfirmed_missing":
				if c.UnconfirmedMissing < *f.v {
					fails = append(fails, fmt.Sprintf("unconfirmed_missing %d, expected at least %d", c.UnconfirmedMissing, *f.v))
				}
			case got[f.name] != *f.v:
				fails = append(fails, fmt.Sprintf("%s %d, expected exactly %d", f.name, got[f.name], *f.v))
			}
		}
		if want := ex.ChannelClosedWith; want != "" && !slices.ContainsFunc(obs.ChannelCloses, func(r string) bool { return strings.Contains(r, want) }) {
			fails = append(fails, fmt.Sprintf("no channel or connection closed with %q (closes seen: %q)", want, obs.ChannelCloses))
		}
	}

	for _, err := range []error{cond.ReconcileErr, cond.BrokerNotBack, cond.FaultMissed, cond.PublishErr, cond.DrainIncomplete} {
		if err != nil {
			doubts = append(doubts, err.Error())
		}
	}
	if c.Unverified > 0 {
		doubts = append(doubts, fmt.Sprintf("%d confirmed messages unverified: the queue was never drained", c.Unverified))
	}
	if cond.Interrupted {
		doubts = append(doubts, "interrupted before the run completed")
	}
	if cond.Unsent > 0 {
		doubts = append(doubts, fmt.Sprintf("%d orders were never published", cond.Unsent))
	}
	switch {
	case len(fails) > 0:
		return Verdict{Status: Fail, Reasons: append(fails, doubts...)}
	case len(doubts) > 0:
		return Verdict{Status: Inconclusive, Reasons: doubts}
	}
	return Verdict{Status: Pass}
}

// Overall combines verdicts: any fail fails, else any inconclusive is
// inconclusive, else pass. Reasons are prefixed with their source.
func Overall(results []ModeResult) Verdict {
	v := Verdict{Status: Pass}
	for _, r := range results {
		switch r.Verdict.Status {
		case Fail:
			v.Status = Fail
		case Inconclusive:
			if v.Status == Pass {
				v.Status = Inconclusive
			}
		}
		for _, reason := range r.Verdict.Reasons {
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s: %s", r.Mode, reason))
		}
	}
	if len(results) == 0 {
		return Verdict{Status: Inconclusive, Reasons: []string{"no mode ran"}}
	}
	return v
}
