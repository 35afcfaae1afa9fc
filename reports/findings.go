package reports

import (
	"fmt"
	"io"
	"slices"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// doubtLists writes the ids that went in doubt, those basic.nack'd at
// some point, and those republished. Under republish: in-doubt the first
// and the last should be one set (streadway/amqp#396): the report says
// whether they are, rather than printing it twice; likewise the nacked
// ids under nacked-and-in-doubt, where an id nacked on its last allowed
// attempt is nacked without a republish after it.
func doubtLists(w io.Writer, m scenario.ModeResult) {
	idList(w, "Went in doubt", m.IDs.WentInDoubt)
	idList(w, "Went nacked (basic.nack at some point)", m.IDs.WentNacked)
	switch {
	case len(m.IDs.Republished) == 0:
	case slices.Equal(m.IDs.WentInDoubt, m.IDs.Republished):
		fmt.Fprintln(w, "\nRepublished: exactly the ids that went in doubt.")
	case len(m.IDs.WentInDoubt) == 0 && slices.Equal(m.IDs.WentNacked, m.IDs.Republished):
		fmt.Fprintln(w, "\nRepublished: exactly the ids that were nacked.")
	case len(m.IDs.WentNacked) > 0:
		idList(w, "Republished (not the same set as went in doubt or nacked)", m.IDs.Republished)
	default:
		idList(w, "Republished (not the same set as went in doubt)", m.IDs.Republished)
	}
}

// windowText says how many messages a confirm mode keeps unsettled: its
// window, or for transactional the messages per tx.commit.
func windowText(m scenario.ModeResult) string {
	if m.Mode == scenario.Transactional {
		return fmt.Sprintf("%s messages per tx.commit", num(m.Window))
	}
	return "window " + num(m.Window)
}

// txLegend explains how a transactional burst fills the confirm columns,
// when the run has one.
func txLegend(w io.Writer, r *scenario.Result) {
	if slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool { return m.Mode == scenario.Transactional }) {
		fmt.Fprintln(w, "- *transactional*: *window* is the messages per tx.commit; a tx.commit-ok confirms them (confirm latency: publish call → tx.commit-ok), a refused tx.commit nacks them, a tx.commit cut off by a lost connection leaves them in doubt.")
	}
}

// brokerLogSection writes the known loss signatures found in the broker's
// log (markdown), next to the ledger they may explain.
func brokerLogSection(w io.Writer, r *scenario.Result) {
	if len(r.BrokerLogFindings) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n## Broker log findings\n\nKnown loss signatures in the broker's log over the run; read them next to the ledger.\n\n")
	for _, f := range r.BrokerLogFindings {
		p("- **%s** × %s: %s", f.Signature, num(f.Count), f.Meaning)
		if f.Messages > 0 {
			p("; the lines name %s dropped messages", num(f.Messages))
		}
		p(". First line: %s\n", code(f.FirstLine))
	}
}

// brokerLogLines writes the findings as plain lines (terminal table).
func brokerLogLines(w io.Writer, r *scenario.Result) {
	for _, f := range r.BrokerLogFindings {
		fmt.Fprintf(w, "broker log: %s × %s", f.Signature, num(f.Count))
		if f.Messages > 0 {
			fmt.Fprintf(w, " (%s dropped messages)", num(f.Messages))
		}
		fmt.Fprintf(w, ": %s\n", f.FirstLine)
	}
}
