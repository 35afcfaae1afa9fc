// Package reports renders a scenario.Result as a terminal table, a markdown
// report and JSON. Renderers are pure (no clock, no environment), so the same
// result always renders to the same bytes.
package reports

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// sticky runs render on a bufio.Writer over w and returns render's error or,
// failing that, the first error writing to w. A bufio.Writer keeps its first
// write error: every later write (fmt.Fprintf, tablewriter, the chart
// encoder) is a no-op returning it, and Flush returns it, so a renderer that
// ignores fmt.Fprintf's result still cannot drop a write error (a full disk,
// a closed pipe). w receives nothing after the first failure.
func sticky(w io.Writer, render func(w io.Writer) error) error {
	bw := bufio.NewWriter(w)
	if err := render(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// JSON writes r as indented JSON (the result.json format, schema_version
// scenario.SchemaVersion). It returns the first error writing to w.
func JSON(w io.Writer, r *scenario.Result) error {
	return sticky(w, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	})
}

var ledgerHeader = []string{"mode", "sent", "confirmed", "lost", "nacked", "returned", "in doubt", "went in doubt", "republished", "delivered", "unconfirmed missing", "duplicates", "redeliveries", "unexpected", "verdict"}

// deadLetterHeader are the ledger columns shown, after "delivered", when
// any mode had a dead-letter queue.
var deadLetterHeader = []string{"dead-lettered", "lost on dead-letter path"}

// hasDeadLetter reports whether any mode of r had a dead-letter queue (or
// found ids in one: results written before dead_letter_queue was recorded).
func hasDeadLetter(r *scenario.Result) bool {
	return slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool {
		return m.DeadLetterQueue != "" || m.DeadLettered > 0 || m.LostDeadLetterPath > 0
	})
}

// ledgerTable is the ledger's header and one row per mode; with dl, the
// dead-letter columns follow "delivered".
func ledgerTable(r *scenario.Result) ([]string, [][]string) {
	dl := hasDeadLetter(r)
	header := ledgerHeader
	if dl {
		i := slices.Index(ledgerHeader, "delivered") + 1
		header = slices.Concat(ledgerHeader[:i], deadLetterHeader, ledgerHeader[i:])
	}
	var rows [][]string
	for _, m := range r.Modes {
		row := ledgerRow(m)
		if dl {
			i := slices.Index(ledgerHeader, "delivered") + 1
			row = slices.Concat(row[:i], deadLetterCells(m), row[i:])
		}
		rows = append(rows, row)
	}
	return header, rows
}

// deadLetterCells are a mode's dead-letter columns: ids found in the
// dead-letter queue (and how many of them the broker nacked), and
// confirmed ids lost on the way there.
func deadLetterCells(m scenario.ModeResult) []string {
	if m.NotRun || (m.DeadLetterQueue == "" && m.DeadLettered == 0 && m.LostDeadLetterPath == 0) {
		return []string{"-", "-"} // no dead-letter queue
	}
	dead := num(m.DeadLettered)
	if m.DeadLetteredNacked > 0 {
		dead += fmt.Sprintf(" (%s nacked)", num(m.DeadLetteredNacked))
	}
	path := num(m.LostDeadLetterPath)
	if !m.Mode.ConfirmMode() {
		path = "n/a"
	} else if m.LostDeadLetterPath > 0 && m.DeadLetterLossAllowed {
		path += " (allowed)"
	}
	return []string{dead, path}
}

// allowedLabel says why lost confirmed messages fail nothing, for a table
// cell.
func allowedLabel(m scenario.ModeResult) string {
	if m.LostAllowedReason == "" {
		return "allowed" // a result written before the reason was recorded
	}
	return "allowed: " + m.LostAllowedReason
}

// label names a mode result: its mode, and its matrix cell if any.
func label(m scenario.ModeResult) string {
	if m.Cell == nil {
		return string(m.Mode)
	}
	return fmt.Sprintf("%s · %s · %s · #%d", m.Mode, m.Cell.QueueType, scenario.Persistence(m.Cell.Persistent), m.Cell.Repeat)
}

func ledgerRow(m scenario.ModeResult) []string {
	if m.NotRun {
		row := []string{label(m)}
		for range ledgerHeader[2:] {
			row = append(row, "-")
		}
		return append(row, "not run")
	}
	confirmed, lost, doubt, wentDoubt, missing := num(m.Confirmed), num(m.Lost), num(m.InDoubt), num(m.WentInDoubt), num(m.UnconfirmedMissing)
	if !m.Mode.ConfirmMode() {
		// No confirm exists in fire-and-forget: say so rather than print 0.
		confirmed, lost, doubt, wentDoubt = "n/a", "n/a", "n/a", "n/a"
	} else {
		missing = "n/a"
	}
	if m.Unverified > 0 {
		lost += fmt.Sprintf(" (%s unverified)", num(m.Unverified))
	}
	switch {
	case m.LostAllowed && m.Lost > 0 && m.RemovedByScenario == m.Lost:
		lost += " (removed by the scenario: allowed)" // its own delete-queue or purge-queue
	case m.LostAllowed && m.Lost > 0:
		lost += " (" + allowedLabel(m) + ")"
	}
	if m.InDoubtDelivered > 0 {
		doubt += fmt.Sprintf(" (%s delivered)", num(m.InDoubtDelivered))
	}
	dups := num(m.Duplicates)
	if m.Duplicates > 0 {
		dups += fmt.Sprintf(" (%s from republish)", num(m.DuplicatesFromRepublish))
	}
	nacked := num(m.Nacked)
	if m.WentNacked > m.Nacked {
		nacked += fmt.Sprintf(" (%s went nacked)", num(m.WentNacked))
	}
	unexpected := num(m.Unexpected)
	if m.Resurrected > 0 {
		unexpected += fmt.Sprintf(" (+%s resurrected)", num(m.Resurrected)) // rabbitmq-server#12366
	}
	return []string{label(m), num(m.Sent), confirmed, lost, nacked, num(m.Returned), doubt, wentDoubt,
		num(m.Republished), num(m.Delivered), missing, dups, num(m.Redeliveries), unexpected, string(m.Verdict.Status)}
}

var speedHeader = []string{"mode", "window", "intake msg/s (before fault)", "publish msg/s (before fault)", "publish msg/s (whole burst)", "absorbed msg/s", "confirm p50 ms", "confirm p99 ms", "confirm max ms", "blocked ms", "broker downtime ms", "client recovery ms", "reconnects"}

func speedRow(m scenario.ModeResult) []string {
	if m.NotRun {
		row := []string{label(m)}
		for range speedHeader[1:] {
			row = append(row, "-")
		}
		return row
	}
	// n/a: the figure does not exist in this mode; -: none, or not measured.
	window, absorbed, p50, p99, max := "n/a", "n/a", "n/a", "n/a", "n/a"
	if m.Mode.ConfirmMode() {
		window, p50, p99, max = num(m.Window), "-", "-", "-"
		if l := m.ConfirmLatencyIntended; l != nil && l.Count > 0 {
			// Rate-limited: from the intended send time, marked with a dagger.
			p50, p99, max = ms(l.P50)+" †", ms(l.P99)+" †", ms(l.Max)+" †"
		} else if m.ConfirmLatency.Count > 0 {
			p50, p99, max = ms(m.ConfirmLatency.P50), ms(m.ConfirmLatency.P99), ms(m.ConfirmLatency.Max)
		}
	} else {
		absorbed = "-"
		if m.AbsorbedRate > 0 {
			absorbed = rate(m.AbsorbedRate)
		}
	}
	down, rec, blocked := "-", "-", "-"
	if m.BrokerDowntimeMS != nil {
		down = ms(*m.BrokerDowntimeMS)
	}
	if m.ClientRecoveryMS != nil {
		rec = ms(*m.ClientRecoveryMS)
	}
	if m.BlockedMS > 0 {
		blocked = ms(m.BlockedMS)
	}
	intake := "-"
	if m.IntakeRate > 0 {
		intake = rate(m.IntakeRate)
	} else if m.IntakeUnknown != "" {
		intake = "?"
	}
	return []string{label(m), window, intake, rate(m.PreFaultPublishRate), rate(m.PublishRate), absorbed, p50, p99, max, blocked, down, rec, num(m.Reconnects)}
}

// textColumns names the columns that hold words, aligned left; every other
// column but the first (the mode) holds figures, aligned right.
var textColumns = map[string]bool{"verdict": true, "status": true, "field": true}

func table(w io.Writer, markdown bool, header []string, rows [][]string) error {
	align := make(tw.Alignment, len(header))
	for i, h := range header {
		align[i] = tw.AlignRight
		if i == 0 || textColumns[h] {
			align[i] = tw.AlignLeft
		}
	}
	if markdown {
		// The markdown renderer writes cells as they are: a | would end one.
		escaped := make([][]string, len(rows))
		for i, r := range rows {
			escaped[i] = make([]string, len(r))
			for j, c := range r {
				escaped[i][j] = cell(c)
			}
		}
		rows = escaped
	}
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
		tablewriter.WithHeaderAlignment(tw.AlignCenter),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header)
	for _, r := range rows {
		if err := t.Append(r); err != nil {
			return err
		}
	}
	return t.Render()
}

// Table writes the terminal tables: the ledger and speed/recovery, one row
// per mode, then the verdict. It returns the first error writing to w.
func Table(w io.Writer, r *scenario.Result) error {
	return sticky(w, func(w io.Writer) error { return writeTable(w, r) })
}

func writeTable(w io.Writer, r *scenario.Result) error {
	fmt.Fprintf(w, "%s — %s, %s orders, %s\n", r.Scenario, r.BrokerVersionOrImage(), num(r.Messages), r.Topology)
	sh, speed := speedTable(r)
	lh, ledger := ledgerTable(r)
	if err := table(w, false, lh, ledger); err != nil {
		return err
	}
	if err := table(w, false, sh, speed); err != nil {
		return err
	}
	for _, row := range speed {
		if strings.HasSuffix(row[5], "†") {
			fmt.Fprintln(w, "† confirm latency from each order's intended send time on the load.rate schedule (corrected for coordinated omission)")
			break
		}
	}
	if hdr, rows := matrixRows(r); rows != nil {
		fmt.Fprintln(w, "matrix: each cell's runs as min / median / max (one value when the cell ran once)")
		if err := table(w, false, hdr, rows); err != nil {
			return err
		}
	}
	if err := clusterTable(w, r); err != nil {
		return err
	}
	if err := resourcesPlain(w, r); err != nil {
		return err
	}
	fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(r.Verdict.Status)))
	for _, reason := range r.Verdict.Reasons {
		fmt.Fprintf(w, "  - %s\n", reason)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	versionScopePlain(w, r)
	brokerLogLines(w, r)
	return nil
}

// maxRanges is how many id ranges a report lists before summarising the rest
// as a count of ids.
const maxRanges = 50

// Markdown writes report.md: a header naming the scenario, broker (version
// and image), client library, run and the exact command; the verdict; the
// ledger and speed tables; a matrix summary when there is one; then one
// section per mode with its faults, confirm latency, affected ids as ranges
// and its timeline. Figures carry their unit (ms, msg/s) in the text or in
// the column header; times are ms since the mode's burst started. It returns
// the first error writing to w.
func Markdown(w io.Writer, r *scenario.Result) error {
	return sticky(w, func(w io.Writer) error { return writeMarkdown(w, r) })
}

func writeMarkdown(w io.Writer, r *scenario.Result) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# rmqtorture: %s\n\n", r.Scenario)
	headlineBlock(w, r)
	if r.Description != "" {
		p("%s\n\n", description(r))
	}
	p("- **Scenario:** %s from %s\n", code(r.Scenario), code(r.File))
	broker := "version unknown (never reached)"
	if r.BrokerVersion != "" {
		broker = r.BrokerVersion
	}
	if r.URI != "" {
		p("- **Broker:** %s at %s (named with --uri: not started by rmqtorture, no fault injected)", broker, code(r.URI))
	} else {
		p("- **Broker:** %s, image %s", broker, code(r.Image))
	}
	if r.Container != "" {
		p(", container %s", code(r.Container))
	}
	if r.Engine != "" {
		p("\n- **Engine:** %s", r.Engine)
	}
	p("\n- **Client library:** %s\n", r.Client)
	p("- **Tool:** rmqtorture %s\n", r.Tool)
	p("- **Queue:** %s; %s orders per mode\n", r.Topology, num(r.Messages))
	p("- **Run:** %s, started %s, took %s s\n", code(r.RunID), r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"), strconv.FormatFloat(r.DurationMS/1000, 'f', 1, 64))
	if NotRecorded(r, "/seed") {
		p("- **Seed:** not recorded\n")
	} else {
		p("- **Seed:** %d (replay the fault jitter with `--seed %d`)\n", r.Seed, r.Seed)
	}
	olderResultLine(w, r)
	brokerConfigLine(w, r)
	restartLine(w, r)
	p("\nCommand:\n\n%s\n", fence(r.Command))
	verdictSection(w, r)
	versionScopeSection(w, r)
	p("\n## Ledger\n\nEvery sent id is in exactly one of: confirmed, lost, unverified, nacked, returned, in doubt, unconfirmed delivered, unconfirmed missing")
	if hasDeadLetter(r) {
		p(", lost on the dead-letter path (confirmed, in neither the queue nor its dead-letter queue, and may have been dead-lettered before the broker went down). *dead-lettered*: ids found in the dead-letter queue, counted in delivered")
	}
	if slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool { return m.Resurrected > 0 }) {
		p(", resurrected (deleted with the queue by the scenario's delete-queue, delivered anyway from the queue declared again: rabbitmq-server#12366; shown beside *unexpected*)")
	}
	p(". Figures are numbers of message ids.\n\n")
	sh, speed := speedTable(r)
	lh, ledger := ledgerTable(r)
	if err := table(w, true, lh, ledger); err != nil {
		return err
	}
	p("\n## Speed and recovery\n\n")
	if err := table(w, true, sh, speed); err != nil {
		return err
	}
	speedLegend(w, r)
	txLegend(w, r)
	if hdr, rows := matrixRows(r); rows != nil {
		p("\n## Matrix\n\nEach cell's runs summarised as min / median / max (one value when the cell ran once).\n\n")
		if err := table(w, true, hdr, rows); err != nil {
			return err
		}
	}
	if err := resourcesSection(w, r); err != nil {
		return err
	}
	brokerLogSection(w, r)
	for i, m := range r.Modes {
		if err := modeSection(w, i, m); err != nil {
			return err
		}
	}
	return nil
}

// verdictSection writes report.md's verdict: its heading, why it is
// partial or in error, its reasons (or that none failed, naming
// fire-and-forget's silent loss beside a pass), and the run's warnings.
func verdictSection(w io.Writer, r *scenario.Result) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	// The verdict is a heading of its own: a list of reasons right after
	// the list above would merge with it.
	p("\n## Verdict: %s\n\n", strings.ToUpper(string(r.Verdict.Status)))
	if r.Interrupted {
		p("Interrupted (Ctrl-C): the result is partial.\n\n")
	}
	if r.Error != "" {
		p("Error: %s\n\n", r.Error)
	}
	for _, reason := range r.Verdict.Reasons {
		p("- %s\n", reason)
	}
	if len(r.Verdict.Reasons) == 0 && r.Verdict.Status == scenario.Pass {
		p("No expectation failed.\n")
		if silent := silentMissing(r, "%[1]s: %[2]s of %[3]s orders (%[4]s) missing, published without an error and never delivered"); len(silent) > 0 {
			p("\nBut %s. A pass means the broker broke no promise; fire-and-forget asks for none.\n", strings.Join(silent, "; "))
		}
	}
	for _, warning := range r.Warnings {
		p("\nWarning: %s\n", warning)
	}
}

// speedLegend explains the speed and recovery table's columns.
func speedLegend(w io.Writer, r *scenario.Result) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n- *intake msg/s (before fault)*: what the broker took in per second from the burst's start to the first fault (without one, to the last confirm): basic.acks in the confirm modes, messages into the queue in fire-and-forget; the mode's cost figure. *?*: the run cannot tell (why is under the headline); *-*: not measured (results written before it was).\n")
	p("- *publish msg/s (before fault)*: publish calls that returned without error per second, up to the first fault (fire-and-forget's return once the bytes are in the client's socket buffer); *(whole burst)*: the same from first publish to last, downtime included.\n")
	p("- *absorbed msg/s*: how fast messages entered the queue before the fault (queue-depth polls), fire-and-forget only.\n")
	p("- *confirm p50/p99/max ms*: publish call → basic.ack; † from the order's intended send time on the load.rate schedule (corrected for coordinated omission).\n")
	if hadFault(r) {
		p("- *broker downtime ms*: a kill, stop, restart, pause, disconnect or quorum loss → AMQP login accepted again; any other step (a command, a partition, a rolling restart) → the time the publisher was without a connection, none when it kept it. *client recovery ms*: fault → first publish or confirm after the publisher reconnected.\n")
	}
	p("- *blocked ms*: time the broker held the publisher blocked (connection.blocked); it is included in confirm latency.\n")
	p("- *n/a*: does not apply to the mode; *-*: none, or not measured.\n")
}

// faultLines writes one line per fault record: trigger, when and with how
// many published it took effect, planned down time, extras, error.
func faultLines(w io.Writer, m scenario.ModeResult) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	for _, f := range m.Faults {
		what := string(f.Action)
		if f.Signal != "" {
			what += " " + f.Signal
		}
		p("\nFault: %s. Its trigger (%s) fired at %s ms with %s published; ", what, f.Trigger, ms(f.AtMS), num(f.AtPublished))
		if f.Action.EffectDuringCall() && f.CallMS > 0 {
			// kill, stop, restart: the effect begins during the call, so
			// the fault is timed from the call's start (streadway/amqp#421).
			// Results written before call_ms existed keep their wording.
			p("the fault took effect during its call (timed from the call's start, which took %s ms) with %s published", ms(f.CallMS), num(f.PublishedAtInject))
		} else {
			p("the fault took effect %s ms later with %s published", ms(f.InjectMS), num(f.PublishedAtInject))
		}
		if f.InFlightAtInject != nil && m.Mode.ConfirmMode() {
			p(" and %s awaiting their confirm", num(*f.InFlightAtInject))
		}
		if f.DownMS > 0 {
			p("; planned down time %s ms", ms(f.DownMS))
		}
		p("%s", faultExtra(f))
		if line := clusterFaultLine(f); line != "" {
			p(". On the cluster: %s", line)
		}
		if line := nodeRecoveryLine(f.NodeRecoveries); line != "" {
			p(". Node by node, in ms after the step took effect: %s", line)
		}
		if line := powerCutLine(f.PowerLoss); line != "" {
			p(". The power cut dropped, %s", line)
		}
		if f.Error != "" {
			p(". Error: %s", f.Error)
		}
		p(".\n")
		commandLines(w, f.Commands)
	}
}

// powerCutLine says, per node, what a power cut dropped and whether its
// control files prove it (scenario.PowerCut); "" for none.
func powerCutLine(cuts []scenario.PowerCut) string {
	parts := make([]string, len(cuts))
	for i, c := range cuts {
		proof := "the control files prove it (the synced one kept, the unsynced one's data gone)"
		if !c.Proven() {
			proof = "NOT proven by the control files"
			switch {
			case !c.SyncedControlKept && !c.UnsyncedControlDropped:
				proof += " (the synced one lost, the unsynced one kept)"
			case !c.SyncedControlKept:
				proof += " (the synced one lost)"
			default:
				proof += " (the unsynced one kept its data)"
			}
		}
		parts[i] = fmt.Sprintf("on %s, %s bytes written to %s files since their last fsync and %s new entries: %s", c.Node, num(int(c.DroppedBytes)), num(c.DroppedFiles), num(c.DroppedEntries), proof)
	}
	return strings.Join(parts, "; ")
}

// commandLines writes each command of a command step: what ran, how it
// ended and how long it took, then its stdout and stderr as indented code
// blocks (their text may hold backquotes a fence would not survive).
func commandLines(w io.Writer, runs []scenario.CommandRun) {
	for _, r := range runs {
		end := fmt.Sprintf("exited %d", r.ExitCode)
		if r.Error != "" {
			end = r.Error
		}
		fmt.Fprintf(w, "\nCommand (%s): `%s`: %s after %s ms.\n", r.Step, strings.ReplaceAll(scenario.CommandLine(r.Argv), "`", "'"), end, ms(r.DurationMS))
		for _, out := range []struct {
			name string
			text string
			cut  int64
		}{{"stdout", r.Stdout, r.StdoutCutBytes}, {"stderr", r.Stderr, r.StderrCutBytes}} {
			if out.text == "" {
				continue
			}
			head := out.name + ":"
			if out.cut > 0 {
				head = fmt.Sprintf("%s (its last %s bytes; %s dropped before):", out.name, num(len(out.text)), num(int(out.cut)))
			}
			fmt.Fprintf(w, "\n%s\n\n", head)
			for _, line := range strings.Split(strings.TrimRight(out.text, "\n"), "\n") {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
}

// counterLines writes the counters beside the ledger that only matter when
// non-zero: client stalls, message deadlines, drain redeliveries, publish
// errors, close reasons.
func counterLines(w io.Writer, m scenario.ModeResult) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	if m.Stalls > 0 {
		p("\nClient stalls: %s (connected, nothing published or confirmed; not loss).\n", num(m.Stalls))
	}
	if m.NotPublished > 0 || m.PendingAtDeadline > 0 {
		p("\nMessage deadline: %s orders not published (the deadline passed before they left the process: safe to report as failed), %s pending at their deadline (written, unconfirmed: they may exist).\n", num(m.NotPublished), num(m.PendingAtDeadline))
	}
	if m.Redeliveries > 0 && m.Consumers == nil {
		p("\nRedeliveries during the drain: %s (same stored message handed out again; not duplicates).\n", num(m.Redeliveries))
	}
	if m.PublishErrors > 0 {
		p("\nPublish calls that returned an error: %s.\n", num(m.PublishErrors))
	}
	for _, c := range m.ChannelCloses {
		p("\nClose reason: %s\n", c)
	}
}

// idLists writes the ids of each class (and of the counters beside it) as
// ranges.
func idLists(w io.Writer, m scenario.ModeResult) {
	idList(w, "Lost (confirmed, never delivered)", m.IDs.Lost)
	idList(w, "Lost on the dead-letter path (confirmed, in neither queue, may have been dead-lettered before the broker went down)", m.IDs.LostDeadLetterPath)
	idList(w, "Unverified (acked or handed off, queue never drained)", m.IDs.Unverified)
	idList(w, "Unconfirmed missing (fire-and-forget, never delivered)", m.IDs.UnconfirmedMissing)
	idList(w, "In doubt at the end", m.IDs.InDoubt)
	idList(w, "Resurrected (deleted with the queue by delete-queue, delivered anyway: rabbitmq-server#12366)", m.IDs.Resurrected)
	idList(w, "Nacked", m.IDs.Nacked)
	idList(w, "Returned", m.IDs.Returned)
	idList(w, "Not published (deadline passed first)", m.IDs.NotPublished)
	idList(w, "Duplicated", m.IDs.Duplicated)
	doubtLists(w, m)
	idList(w, "Dead-lettered (found in the dead-letter queue)", m.IDs.DeadLettered)
}

// modeSection writes one mode's section; i is its index in the result (it
// names the mode's chart file).
func modeSection(w io.Writer, i int, m scenario.ModeResult) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n## %s\n\n", label(m))
	if m.NotRun {
		p("Not run. Verdict: **%s**.\n\n", m.Verdict.Status)
		for _, reason := range m.Verdict.Reasons {
			p("- %s\n", reason)
		}
		return nil
	}
	if m.Error != "" {
		p("Error: %s\n\n", m.Error)
	}
	p("Queue %s", code(m.Queue))
	if m.Mode.ConfirmMode() {
		p(", %s", windowText(m))
	}
	p(". Verdict: **%s**.\n", m.Verdict.Status)
	if len(m.Verdict.Reasons) > 0 {
		p("\n")
	}
	for _, reason := range m.Verdict.Reasons {
		p("- %s\n", reason)
	}
	faultLines(w, m)
	consumerSection(w, m)
	if m.ConfirmLatencyIntended != nil {
		p("\nConfirm latency from the intended send time (corrected for coordinated omission; load.rate schedule): %s.\n", latency(*m.ConfirmLatencyIntended))
		p("\nConfirm latency from the publish call (hides time the publisher was held up): %s.\n", latency(m.ConfirmLatency))
	} else if m.Mode.ConfirmMode() {
		p("\nConfirm latency: %s.\n", latency(m.ConfirmLatency))
	}
	if err := timelineSection(w, i, m); err != nil {
		return err
	}
	for _, n := range m.Notes {
		p("\nNote: %s\n", n)
	}
	counterLines(w, m)
	duplicatesNote(w, m)
	deadLetterSection(w, m)
	idLists(w, m)
	if len(m.Events) == 0 {
		return nil
	}
	p("\n<details><summary>Timeline (%d events)</summary>\n\n| at ms | event | detail |\n|---:|:---|:---|\n", len(m.Events))
	for _, e := range m.Events {
		p("| %s | %s | %s |\n", ms(e.AtMS), e.Kind, cell(e.Detail))
	}
	p("\n</details>\n")
	return nil
}

// deadLetterSection says where the copies ended up when the mode had a
// dead-letter queue: how many ids the drain found there, how many of those
// the broker had nacked, and how many confirmed ids it lost on the way.
func deadLetterSection(w io.Writer, m scenario.ModeResult) {
	if m.DeadLetterQueue == "" && m.DeadLettered == 0 {
		return
	}
	where := "the dead-letter queue"
	if m.DeadLetterQueue != "" {
		where += " " + code(m.DeadLetterQueue)
	}
	fmt.Fprintf(w, "\nDead-lettered: %s of the %s delivered ids were found in %s", num(m.DeadLettered), num(m.Delivered), where)
	if m.DeadLetteredNacked > 0 {
		fmt.Fprintf(w, "; %s of them were basic.nack'd (the queue refused them and dead-lettered them)", num(m.DeadLetteredNacked))
	}
	if m.LostDeadLetterPath > 0 {
		allowed := "not allowed"
		if m.DeadLetterLossAllowed {
			allowed = "allowed"
		}
		fmt.Fprintf(w, "; %s confirmed ids were lost on the way (%s: %s)", num(m.LostDeadLetterPath), allowed, m.DeadLetterGuarantee)
	}
	fmt.Fprintln(w, ".")
	xDeathLine(w, m)
}

// idList writes the ids of one class as ranges of sequence numbers: the
// first maxRanges ranges, then how many ids the rest hold.
func idList(w io.Writer, title string, rs []metrics.Range) {
	if len(rs) == 0 {
		return
	}
	n := 0
	for _, r := range rs {
		n += r.Len()
	}
	noun := "ids"
	if n == 1 {
		noun = "id"
	}
	fmt.Fprintf(w, "\n%s: %s %s (sequence numbers): ", title, num(n), noun)
	shown := rs[:min(len(rs), maxRanges)]
	parts := make([]string, len(shown))
	rest := n
	for i, r := range shown {
		parts[i] = r.String()
		rest -= r.Len()
	}
	fmt.Fprint(w, strings.Join(parts, ", "))
	if rest > 0 {
		fmt.Fprintf(w, " … and %s more ids", num(rest))
	}
	fmt.Fprintln(w)
}

func latency(l metrics.LatencySummary) string {
	if l.Count == 0 {
		return "none recorded (no confirm arrived)"
	}
	return latencyOver(l, "confirms")
}

// latencyOver describes a latency summary of count samples of what
// ("confirms", "deliveries").
func latencyOver(l metrics.LatencySummary, what string) string {
	p999 := ms(l.P999) + " ms"
	if l.P999 < l.P99 {
		// Quantiles only rise: a p99.9 below p99 is one an older
		// result.json did not record (Result.NotRecorded), read as 0.
		p999 = "not recorded"
	}
	s := fmt.Sprintf("p50 %s ms, p90 %s ms, p99 %s ms, p99.9 %s, max %s ms over %s %s", ms(l.P50), ms(l.P90), ms(l.P99), p999, ms(l.Max), num(int(l.Count)), what)
	if l.OutOfRange > 0 {
		s += fmt.Sprintf(" (%s more beyond 10 minutes, not recorded)", num(int(l.OutOfRange)))
	}
	return s
}

// cell makes text safe in a markdown table cell: a | would end the cell and
// a newline the row.
func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\r\n", " ", "\n", " ").Replace(s)
}

// code writes s as inline code, with a fence of backticks longer than any
// run of backticks inside it.
func code(s string) string {
	if s == "" {
		return "(none)"
	}
	fence := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// fence writes s as a fenced code block.
func fence(s string) string {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return f + "\n" + s + "\n" + f
}

func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := range len(s) {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// num formats an integer with thousands separators.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// rate formats msg/s without decimals, with separators.
func rate(v float64) string { return num(int(math.Round(v))) }

// ms formats milliseconds: one decimal below 100 ms, none from 100 ms on
// (decided on the rounded value, so 99.96 is "100", not "100.0").
func ms(v float64) string {
	if r := math.Round(v*10) / 10; math.Abs(r) < 100 {
		if r == 0 {
			r = 0 // not "-0.0"
		}
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
	return num(int(math.Round(v)))
}

// matrixRows summarises a matrix run: one row per mode and cell (queue
// type, persistence) with min / median / max over its repeats. nil when the
// result has no matrix cells.
func matrixRows(r *scenario.Result) ([]string, [][]string) {
	type key struct {
		mode       scenario.Mode
		queue      scenario.QueueType
		persistent bool
	}
	var order []key
	groups := map[key][]scenario.ModeResult{}
	for _, m := range r.Modes {
		if m.Cell == nil || m.NotRun {
			continue
		}
		k := key{m.Mode, m.Cell.QueueType, m.Cell.Persistent}
		if _, seen := groups[k]; !seen {
			order = append(order, k)
		}
		groups[k] = append(groups[k], m)
	}
	if len(order) == 0 {
		return nil, nil
	}
	hdr := []string{"mode · queue · messages", "runs", "pass", "lost", "unconfirmed missing", "went in doubt", "duplicates", "publish msg/s (before fault)", "confirm p99 ms"}
	var rows [][]string
	for _, k := range order {
		g := groups[k]
		pass := 0
		for _, m := range g {
			if m.Verdict.Status == scenario.Pass {
				pass++
			}
		}
		stat := func(f func(scenario.ModeResult) float64, format func(float64) string) string {
			vals := make([]float64, len(g))
			for i, m := range g {
				vals[i] = f(m)
			}
			slices.Sort(vals)
			if len(vals) == 1 {
				return format(vals[0]) // not "1,487 / 1,487 / 1,487"
			}
			return fmt.Sprintf("%s / %s / %s", format(vals[0]), format(median(vals)), format(vals[len(vals)-1]))
		}
		count := func(v float64) string { return num(int(math.Round(v))) }
		lost, missing, doubt, p99 := "n/a", "n/a", "n/a", "-"
		if k.mode.ConfirmMode() {
			lost = stat(func(m scenario.ModeResult) float64 { return float64(m.Lost) }, count)
			doubt = stat(func(m scenario.ModeResult) float64 { return float64(m.WentInDoubt) }, count)
			p99 = stat(func(m scenario.ModeResult) float64 { return m.ConfirmLatency.P99 }, ms)
		} else {
			missing = stat(func(m scenario.ModeResult) float64 { return float64(m.UnconfirmedMissing) }, count)
		}
		rows = append(rows, []string{
			fmt.Sprintf("%s · %s · %s", k.mode, k.queue, scenario.Persistence(k.persistent)), num(len(g)), num(pass), lost, missing, doubt,
			stat(func(m scenario.ModeResult) float64 { return float64(m.Duplicates) }, count),
			stat(func(m scenario.ModeResult) float64 { v, _ := modeRate(m); return v }, rate), p99,
		})
	}
	return hdr, rows
}

// restartLine gives the median time from a broker container running again
// (started, unpaused, reconnected, or its restart call returned) to an
// accepted AMQP login, over every fault of the run that timed both: the
// broker's own boot, which every kill, stop and restart pays. Nothing when
// no fault timed both.
func restartLine(w io.Writer, r *scenario.Result) {
	var boots []float64
	var actions []string
	for _, m := range r.Modes {
		for _, f := range m.Faults {
			if rec := f.Recovery; rec != nil && rec.ContainerRunningMS != nil && rec.AMQPAcceptingMS != nil {
				boots = append(boots, *rec.AMQPAcceptingMS-*rec.ContainerRunningMS)
				if !slices.Contains(actions, string(f.Action)) {
					actions = append(actions, string(f.Action))
				}
			}
		}
	}
	if len(boots) == 0 {
		return
	}
	fmt.Fprintf(w, "- **Broker restart:** median %s s from the container running again to an accepted AMQP login (%d× after %s)\n",
		strconv.FormatFloat(median(boots)/1000, 'f', 1, 64), len(boots), strings.Join(actions, ", "))
}

// brokerConfigLine lists the configuration the run wrote into the broker
// container, if any.
func brokerConfigLine(w io.Writer, r *scenario.Result) {
	if len(r.BrokerConfig) == 0 && len(r.BrokerAdvancedConfig) == 0 {
		return
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.BrokerConfig)) {
		parts = append(parts, code(k+" = "+r.BrokerConfig[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(r.BrokerAdvancedConfig)) {
		parts = append(parts, code(fmt.Sprintf("{rabbit, %s, %d}", k, r.BrokerAdvancedConfig[k])))
	}
	fmt.Fprintf(w, "- **Broker configuration** (written before its first start): %s\n", strings.Join(parts, ", "))
}

// duplicatesNote explains every duplicated id by its cause, from the id
// ranges: republished without going in doubt (a confirm timeout under
// load.on_confirm_timeout: republish, whose late confirms it counts, or a
// basic.nack under republish), republished after going in doubt (the
// broker had stored the original although it never acked it), or never
// republished (the broker delivered one message more than once). Nothing
// when there are neither duplicates nor late confirms.
func duplicatesNote(w io.Writer, m scenario.ModeResult) {
	if m.Duplicates == 0 && m.LateConfirms == 0 {
		return
	}
	dup := m.IDs.Duplicated
	if len(dup) == 0 {
		// Late confirms alone, or duplicates of a result without id ranges
		// (an older one: the table has the count).
		if m.LateConfirms > 0 {
			fmt.Fprintf(w, "\nLate confirms: %s confirms of an earlier copy, after its id was published again on the same channel when its confirm timed out, matched to their ids by delivery tag.\n", num(m.LateConfirms))
		}
		return
	}
	republished := metrics.IntersectRanges(dup, m.IDs.Republished)
	afterDoubt := metrics.RangesLen(metrics.IntersectRanges(republished, m.IDs.WentInDoubt))
	noDoubt := metrics.RangesLen(republished) - afterDoubt
	never := metrics.RangesLen(dup) - metrics.RangesLen(republished)
	fmt.Fprintf(w, "\nDuplicates: %s %s delivered more than once (%s extra %s):\n", num(metrics.RangesLen(dup)), plural(metrics.RangesLen(dup), "id", "ids"), num(m.Duplicates), plural(m.Duplicates, "copy", "copies"))
	if noDoubt > 0 {
		late := ""
		if m.LateConfirms > 0 {
			late = fmt.Sprintf("; %s late %s of an earlier copy came after the copy was sent, matched to %s by delivery tag",
				num(m.LateConfirms), plural(m.LateConfirms, "confirm", "confirms"), plural(m.LateConfirms, "its id", "their ids"))
		}
		fmt.Fprintf(w, "- %s republished without going in doubt (a confirm timeout under `load.on_confirm_timeout: republish`, or a `basic.nack` republished): the broker had stored the first copy too%s.\n", num(noDoubt), late)
	}
	if afterDoubt > 0 {
		fmt.Fprintf(w, "- %s republished after going in doubt when the connection was lost: the broker had stored the original although it never acked it.\n", num(afterDoubt))
	}
	if never > 0 {
		fmt.Fprintf(w, "- %s never republished: the broker delivered one message more than once.\n", num(never))
	}
	if noDoubt == 0 && m.LateConfirms > 0 {
		fmt.Fprintf(w, "\nLate confirms: %s of an earlier copy, after its id was published again on the same channel when its confirm timed out, matched by delivery tag; no such copy was delivered twice.\n", num(m.LateConfirms))
	}
}
