package cmd

// The field's second round of reports, on a real broker: publishers that
// share a connection (rabbitmq/amqp091-go#182), transactional publishing
// (rabbitmq-server#8966), the ids behind "went in doubt" and "republished",
// and the broker log's loss signatures (rabbitmq-server#13390). Each test
// runs a shipped scenario; runScenario also re-judges it from its history
// (`rmqtorture check`), id ranges included.

import (
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// checkRepublishedIsInDoubtSet: under republish: in-doubt with one fault,
// the ids republished are exactly the ids that went in doubt, and every
// duplicate is explained by a republish. channels is the number of
// channels that shared the connection the fault broke: with one, each id
// is republished once, on the next connection. With more, the channels
// share one queue of ids to publish again, so a sibling channel that has
// not yet seen the connection die can take an id another one just put
// back, and that copy goes in doubt too: at most one attempt per channel
// on the dying connection (a channel's failed attempt ends its epoch), so
// republish attempts are between the ids and channels × the ids (a CI run
// of shared-connection-kill saw 195 attempts for 194 ids).
func checkRepublishedIsInDoubtSet(t *testing.T, m scenario.ModeResult, channels int) {
	t.Helper()
	doubt, again := ids(m.IDs.WentInDoubt), ids(m.IDs.Republished)
	if len(doubt) != m.WentInDoubt || !slices.Equal(doubt, again) || m.Republished < m.WentInDoubt || m.Republished > channels*m.WentInDoubt {
		t.Fatalf("%s: went in doubt %d (%d listed), republished %d (%d listed; want %d–%d attempts with %d channels on the connection); sets equal: %v",
			m.Mode, m.WentInDoubt, len(doubt), m.Republished, len(again), m.WentInDoubt, channels*m.WentInDoubt, channels, slices.Equal(doubt, again))
	}
	if m.Duplicates != m.DuplicatesFromRepublish || m.InDoubt != 0 {
		t.Fatalf("%s: duplicates %d (%d from republish), in doubt at the end %d", m.Mode, m.Duplicates, m.DuplicatesFromRepublish, m.InDoubt)
	}
}

// connectedPublishers returns, per connection number, the publishers whose
// channel opened on it (connected events).
func connectedPublishers(m scenario.ModeResult) map[int][]int {
	out := map[int][]int{}
	for _, e := range m.Events {
		if e.Kind == metrics.EvConnected {
			out[e.Connection] = append(out[e.Connection], e.Publisher)
		}
	}
	for _, ps := range out {
		slices.Sort(ps)
	}
	return out
}

// Four publishers on one connection, one kill: the one connection is
// re-established once (four connections would reconnect four times), each
// publisher's channel opens on the first and on the second, at most four
// windows go in doubt, and exactly those ids are republished.
func TestSharedConnectionKill(t *testing.T) {
	r := runScenario(t, "shared-connection-kill")
	m := mode(t, r, scenario.ConfirmWindow)
	if m.Reconnects != 1 {
		t.Fatalf("reconnects %d, want 1: the four publishers share one connection", m.Reconnects)
	}
	all := []int{1, 2, 3, 4}
	if got := connectedPublishers(m); len(got) != 2 || !slices.Equal(got[1], all) || !slices.Equal(got[2], all) {
		t.Fatalf("channels opened per connection: %v, want publishers 1–4 on connections 1 and 2", got)
	}
	// Four publishers publish at once: by the time the trigger reads the
	// count, each may have made one more call (a CI run saw 4,003).
	if len(m.Faults) != 1 || m.Faults[0].AtPublished < 4000 || m.Faults[0].AtPublished > 4004 || m.Faults[0].Error != "" {
		t.Fatalf("fault %+v, want one kill at 4,000 published (up to one more call per publisher)", m.Faults)
	}
	if m.WentInDoubt < 1 || m.WentInDoubt > 4*m.Window || m.Window != 100 {
		t.Fatalf("went in doubt %d, want 1–%d (4 channels × window %d)", m.WentInDoubt, 4*m.Window, m.Window)
	}
	checkRepublishedIsInDoubtSet(t, m, 4)
}

// Transactions of 10, one kill: the transaction open at the kill goes in
// doubt (consecutive ids, at most 10: one publisher takes fresh ids in
// order), is republished, and every order is committed exactly once.
func TestKillMidBurstTransactional(t *testing.T) {
	r := runScenario(t, "kill-mid-burst-tx")
	m := mode(t, r, scenario.Transactional)
	if m.Window != 10 || m.Reconnects != 1 || len(m.Faults) != 1 || m.Faults[0].AtPublished != 2000 {
		t.Fatalf("window %d, reconnects %d, faults %+v: want 10 per commit, one kill at 2,000 published", m.Window, m.Reconnects, m.Faults)
	}
	if len(m.IDs.WentInDoubt) != 1 || m.WentInDoubt > m.Window {
		t.Fatalf("went in doubt %v: want one run of at most %d ids (one transaction)", m.IDs.WentInDoubt, m.Window)
	}
	// Every order's commit-ok recorded one latency; in-doubt attempts none.
	if m.ConfirmLatency.Count != int64(r.Messages) {
		t.Fatalf("%d commit latencies, want one per order (%d)", m.ConfirmLatency.Count, r.Messages)
	}
	checkRepublishedIsInDoubtSet(t, m, 1)
}
