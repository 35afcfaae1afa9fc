package reports

// The versions report (issue 13): the same scenarios run on several broker
// images, side by side. Each run keeps its own result.json; this report
// reads them and writes versions.json and versions.md, and prints the
// table on the terminal.

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// VersionsSchemaVersion is the version of the versions.json layout,
// described by reports/schemas/versions.v1.schema.json.
const VersionsSchemaVersion = 1

// ChangeRatio is how far a publish rate or a p99 confirm latency must move,
// as a ratio against the reference version's, to be listed under "What
// changed": below ×1.25 and above ×0.8 it is run-to-run noise on a shared
// machine (compare's thresholds in docs/ci.md are of the same order).
const ChangeRatio = 1.25

//go:embed schemas/versions.v1.schema.json
var versionsSchema []byte

var compiledVersions = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return compile(versionsSchema, "schemas/versions.v1.schema.json")
})

// Versions is versions.json: every scenario of one invocation on every
// image, one column per image in the order given.
type Versions struct {
	SchemaVersion int    `json:"schema_version"`
	Tool          string `json:"tool"`
	Command       string `json:"command"`
	// Group is the group entry that was run (e.g. upgrade-check), if any.
	Group     string    `json:"group,omitempty"`
	StartedAt time.Time `json:"started_at"`
	// Interrupted: Ctrl-C stopped the invocation; runs it never started
	// are null in their scenario's runs.
	Interrupted bool             `json:"interrupted,omitempty"`
	Columns     []VersionColumn  `json:"columns"`
	Scenarios   []VersionsOfOne  `json:"scenarios"`
	Changes     []VersionChange  `json:"changes"`
	Verdict     scenario.Verdict `json:"verdict"`
}

// VersionColumn is one image: its column is headed by the version the
// broker reported (AMQP server-properties), or by the image when two
// images report the same version or the broker never answered.
type VersionColumn struct {
	Name          string `json:"name"`
	Image         string `json:"image"`
	BrokerVersion string `json:"broker_version,omitempty"`
	// Features are the image's feature flags and deprecated features as
	// its broker listed them (the first of its runs' result.json that has
	// them); absent when none was listed.
	Features *scenario.BrokerFeatures `json:"features,omitempty"`
}

// VersionsOfOne is one scenario on every image: its runs (one per column,
// null when it did not run on that image) and its rows.
type VersionsOfOne struct {
	Scenario string         `json:"scenario"`
	Runs     []*VersionsRun `json:"runs"`
	Rows     []VersionRow   `json:"rows"`
}

// VersionsRun is one run of a scenario on one image, as its result.json
// records it.
type VersionsRun struct {
	// Dir is the run's folder, holding its result.json and report.md.
	Dir           string           `json:"dir"`
	RunID         string           `json:"run_id"`
	BrokerVersion string           `json:"broker_version,omitempty"`
	Verdict       scenario.Verdict `json:"verdict"`
	Interrupted   bool             `json:"interrupted,omitempty"`
	// VersionScope is the version-scoped expectation that judged the run
	// (absent: the scenario states none).
	VersionScope *scenario.AppliedVersionScope `json:"version_scope,omitempty"`
}

// VersionRow is one value of one mode (or matrix cell, over its runs) on
// every image.
type VersionRow struct {
	// Group is the mode, or "mode · queue type · persistence" for a matrix
	// cell.
	Group string        `json:"group"`
	Mode  scenario.Mode `json:"mode"`
	// Field names the value: an expect.modes field where one exists (sent,
	// lost, unconfirmed_missing, deliveries_per_message…), else
	// publish_rate_msgs_per_s, confirm_p99_ms, x_death_count_at_park,
	// consumer_deliveries or verdict.
	Field string `json:"field"`
	Label string `json:"label"`
	// Values are the figures per column (counts, msg/s, ms); null where
	// the mode did not run or the value does not exist in it.
	Values []*float64 `json:"values"`
	// Texts are the values as the tables show them ("n/a": not in this
	// mode; "-": not run or not measured).
	Texts []string `json:"texts"`
}

// VersionChange is one value that differs between a version and the
// reference (the first column that ran the scenario).
type VersionChange struct {
	Scenario string `json:"scenario"`
	Group    string `json:"group"`
	Field    string `json:"field"`
	Label    string `json:"label"`
	// Column and Reference name the two columns; From is the reference's
	// value, To this column's.
	Column    string `json:"column"`
	Reference string `json:"reference"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Ratio is To/From for loss, publish rate and p99 latency (absent
	// when From is 0 or the value is not one of those).
	Ratio *float64 `json:"ratio,omitempty"`
	// Expected: the field is among the Stated fields of this column's (or
	// the reference's) version scope; Because cites why.
	Expected bool   `json:"expected"`
	Because  string `json:"because,omitempty"`
	// Contradicted: a version scope states the field, but the run it
	// judged failed its expectations (the value measured is not the one
	// stated); Because is that scope's.
	Contradicted bool `json:"contradicted,omitempty"`
	// Behaviour: the value is one a broker decides, the same on every run
	// of one version (BehaviourFields), not a measurement that varies from
	// run to run. A behaviour that changed and no version scope states
	// fails the versions verdict: the upgrade question's answer.
	Behaviour bool `json:"behaviour,omitempty"`
}

// BehaviourFields are the values a broker version decides (who
// dead-letters a poison message and after how many deliveries, the x-death
// count a retry loop sees) plus a mode's verdict: a change in one that no
// version scope states (expect.versions) fails the versions report. Counts
// that depend on the fault's timing (missing, in doubt, duplicates,
// redeliveries), rates and latencies are listed but never fail it.
var BehaviourFields = map[string]bool{"dead_lettered": true, "deliveries_per_message": true,
	"dead_letter_reason": true, "retries": true, "x_death_count_at_park": true, "verdict": true}

// VersionsRunInput is one run's result for BuildVersions.
type VersionsRunInput struct {
	Image  string
	Dir    string
	Result *scenario.Result
}

// VersionsInput is what BuildVersions assembles: the scenarios in run
// order, the images in column order and the runs that happened.
type VersionsInput struct {
	Tool, Command, Group string
	StartedAt            time.Time
	Interrupted          bool
	Scenarios            []string
	Images               []string
	Runs                 []VersionsRunInput
}

// rowSpec is one value the report takes from a group of mode results.
type rowSpec struct {
	field, label string
	// value is the figure and its text; ok false: not in this mode ("n/a").
	value func(g runGroup) (float64, string, bool)
	ratio bool // changes are shown as a ratio against the reference
}

func sum(g runGroup, f func(scenario.ModeResult) int) int {
	n := 0
	for _, m := range g.runs {
		n += f(m)
	}
	return n
}

func count(f func(scenario.ModeResult) int) func(g runGroup) (float64, string, bool) {
	return func(g runGroup) (float64, string, bool) { n := sum(g, f); return float64(n), num(n), true }
}

func confirmCount(f func(scenario.ModeResult) int) func(g runGroup) (float64, string, bool) {
	return func(g runGroup) (float64, string, bool) {
		if !g.mode.ConfirmMode() {
			return 0, "", false
		}
		return count(f)(g)
	}
}

// histogram sums a per-message histogram of the group's consumers (value →
// messages) and returns its median value and text: the value, or
// "min–max" when the messages differ; false when no consumer recorded it.
func histogram(f func(*scenario.ConsumerStats) map[string]int) func(g runGroup) (float64, string, bool) {
	return func(g runGroup) (float64, string, bool) {
		var vals []float64
		counts := map[float64]int{}
		for _, m := range g.runs {
			if m.Consumers == nil {
				continue
			}
			for k, n := range f(m.Consumers) {
				var v float64
				if _, err := fmt.Sscan(k, &v); err != nil || n <= 0 {
					continue
				}
				if counts[v] == 0 {
					vals = append(vals, v)
				}
				counts[v] += n
			}
		}
		if len(vals) == 0 {
			return 0, "", false
		}
		slices.Sort(vals)
		total := 0
		for _, n := range counts {
			total += n
		}
		med, seen := vals[0], 0
		for _, v := range vals {
			seen += counts[v]
			if 2*seen >= total {
				med = v
				break
			}
		}
		text := num(int(vals[0]))
		if len(vals) > 1 {
			text += "–" + num(int(vals[len(vals)-1]))
		}
		return med, text, true
	}
}

var versionRows = []rowSpec{
	{field: "sent", label: "sent", value: count(func(m scenario.ModeResult) int { return m.Sent })},
	{field: "confirmed", label: "confirmed", value: confirmCount(func(m scenario.ModeResult) int { return m.Confirmed })},
	{field: "lost", label: "lost", value: confirmCount(func(m scenario.ModeResult) int { return m.Lost }), ratio: true},
	{field: "unconfirmed_missing", label: "missing", ratio: true, value: func(g runGroup) (float64, string, bool) {
		if g.mode.ConfirmMode() {
			return 0, "", false
		}
		return count(func(m scenario.ModeResult) int { return m.UnconfirmedMissing })(g)
	}},
	{field: "in_doubt", label: "in doubt", value: confirmCount(func(m scenario.ModeResult) int { return m.InDoubt })},
	{field: "nacked", label: "nacked", value: confirmCount(func(m scenario.ModeResult) int { return m.Nacked })},
	{field: "returned", label: "returned", value: count(func(m scenario.ModeResult) int { return m.Returned })},
	{field: "duplicates", label: "duplicates", value: count(func(m scenario.ModeResult) int { return m.Duplicates })},
	{field: "dead_lettered", label: "dead-lettered", value: func(g runGroup) (float64, string, bool) {
		if !slices.ContainsFunc(g.runs, func(m scenario.ModeResult) bool { return m.DeadLetterQueue != "" || m.DeadLettered > 0 }) {
			return 0, "", false
		}
		return count(func(m scenario.ModeResult) int { return m.DeadLettered })(g)
	}},
	{field: "deliveries_per_message", label: "deliveries per message", value: histogram(func(c *scenario.ConsumerStats) map[string]int { return c.DeliveriesPerMessage })},
	// Who dead-lettered: the reason of each id's latest x-death entry
	// (delivery_limit: the broker; rejected: the consumer gave up), as
	// text; a change of who stops a poison message is a change of
	// behaviour even when the counts agree.
	{field: "dead_letter_reason", label: "dead-letter reason", value: deadLetterReasons},
	{field: "publish_rate_msgs_per_s", label: "publish msg/s", ratio: true, value: func(g runGroup) (float64, string, bool) {
		f := g.figures()
		if f.rate <= 0 {
			return 0, "-", true
		}
		return f.rate, rate(f.rate), true
	}},
	{field: "confirm_p99_ms", label: "p99 confirm ms", ratio: true, value: func(g runGroup) (float64, string, bool) {
		if !g.mode.ConfirmMode() {
			return 0, "", false
		}
		f := g.figures()
		if !f.hasP99 {
			return 0, "-", true
		}
		return f.p99, ms(f.p99), true
	}},
	// Behaviours shown in -o wide, markdown and JSON, and under "What
	// changed"; the default table leaves them out.
	{field: "delivered", label: "delivered", value: count(func(m scenario.ModeResult) int { return m.Delivered })},
	{field: "redeliveries", label: "redeliveries", value: count(func(m scenario.ModeResult) int { return m.Redeliveries })},
	{field: "republished", label: "republished", value: confirmCount(func(m scenario.ModeResult) int { return m.Republished })},
	{field: "consumer_deliveries", label: "consumer deliveries", value: func(g runGroup) (float64, string, bool) {
		if !slices.ContainsFunc(g.runs, func(m scenario.ModeResult) bool { return m.Consumers != nil }) {
			return 0, "", false
		}
		return count(func(m scenario.ModeResult) int {
			if m.Consumers == nil {
				return 0
			}
			return m.Consumers.Deliveries
		})(g)
	}},
	{field: "retries", label: "retries at park", value: histogram(func(c *scenario.ConsumerStats) map[string]int { return c.RetriesAtPark })},
	{field: "x_death_count_at_park", label: "x-death count at park", value: histogram(func(c *scenario.ConsumerStats) map[string]int { return c.XDeathCountAtPark })},
	// How the burst went, beyond its totals: who closed the publisher's
	// connections and why, how often it failed over, and which ids were
	// nacked or went in doubt (their span over the burst). They vary with
	// a fault's timing, so they are measured, not judged: listed under
	// "What changed" so that two versions that behaved differently never
	// read as the same.
	{field: "channel_closes", label: "connection closes", value: closeReasons},
	{field: "reconnects", label: "failovers (reconnects)", value: count(func(m scenario.ModeResult) int { return m.Reconnects })},
	{field: "nacked_ids", label: "nacked ids", value: idSpan(func(m scenario.ModeResult) []metrics.Range { return m.IDs.WentNacked })},
	{field: "went_in_doubt_ids", label: "ids that went in doubt", value: idSpan(func(m scenario.ModeResult) []metrics.Range { return m.IDs.WentInDoubt })},
}

// closeReasons is the row of the publisher's close reasons, each cut to
// who closed and the reply code ("channel closed by broker: 406
// PRECONDITION_FAILED", the text after " - " left out), counted; "none"
// where nothing closed.
func closeReasons(g runGroup) (float64, string, bool) {
	counts := map[string]int{}
	for _, m := range g.runs {
		for _, c := range m.ChannelCloses {
			reason, _, _ := strings.Cut(c, " - ")
			counts[strings.TrimSpace(reason)]++
		}
	}
	if text := reasonsText(counts); text != "-" {
		return 0, text, true
	}
	return 0, "none", true
}

// idSpan is a row of the ids ids reads, as their count and span over the
// burst ("120 ids, 3,000–3,119 in 1 range"; "none").
func idSpan(ids func(scenario.ModeResult) []metrics.Range) func(runGroup) (float64, string, bool) {
	return func(g runGroup) (float64, string, bool) {
		var all []metrics.Range
		for _, m := range g.runs {
			all = append(all, ids(m)...)
		}
		if len(all) == 0 {
			return 0, "none", true
		}
		n := metrics.RangesLen(all)
		first, last := all[0].First, all[0].Last
		for _, r := range all {
			first, last = min(first, r.First), max(last, r.Last)
		}
		return float64(n), fmt.Sprintf("%s %s, %s–%s in %d %s", num(n), plural(n, "id", "ids"), num(first), num(last), len(all), plural(len(all), "range", "ranges")), true
	}
}

// deadLetterReasons is the row of x-death reasons (reasonsText); not a
// row where nothing was dead-lettered.
func deadLetterReasons(g runGroup) (float64, string, bool) {
	counts := map[string]int{}
	for _, m := range g.runs {
		for r, n := range m.DeadLetterReasons {
			counts[r] += n
		}
	}
	if text := reasonsText(counts); text != "-" {
		return 0, text, true
	}
	return 0, "", false
}

// summaryFields are the rows the default terminal table shows (optional
// ones only when some column is not 0).
var summaryFields = map[string]bool{"sent": false, "confirmed": false, "lost": false, "unconfirmed_missing": false,
	"in_doubt": true, "nacked": true, "returned": true, "duplicates": true, "dead_lettered": true, "dead_letter_reason": true,
	"deliveries_per_message": false, "publish_rate_msgs_per_s": false, "confirm_p99_ms": false}

// BuildVersions assembles the versions report from the runs: columns in
// image order, scenarios in run order, each mode (matrix cell) with its
// values per column, what differs from the reference column, and the
// verdict: fail when a run failed, else inconclusive when a run was
// inconclusive, interrupted or never ran, else pass.
func BuildVersions(in VersionsInput) *Versions {
	v := &Versions{SchemaVersion: VersionsSchemaVersion, Tool: in.Tool, Command: in.Command, Group: in.Group,
		StartedAt: in.StartedAt, Interrupted: in.Interrupted, Changes: []VersionChange{}}
	v.Columns = versionColumns(in)
	col := map[string]int{}
	for i, img := range in.Images {
		col[img] = i
	}
	var reasons []string
	status := scenario.Pass
	for _, name := range in.Scenarios {
		one := VersionsOfOne{Scenario: name, Runs: make([]*VersionsRun, len(in.Images)), Rows: []VersionRow{}}
		results := make([]*scenario.Result, len(in.Images))
		for _, r := range in.Runs {
			i, ok := col[r.Image]
			if r.Result == nil || r.Result.Scenario != name || !ok {
				continue
			}
			results[i] = r.Result
			one.Runs[i] = &VersionsRun{Dir: r.Dir, RunID: r.Result.RunID, BrokerVersion: r.Result.BrokerVersion,
				Verdict: r.Result.Verdict, Interrupted: r.Result.Interrupted, VersionScope: r.Result.VersionScope}
		}
		for i, run := range one.Runs {
			where := name + " on " + v.Columns[i].Name
			switch {
			case run == nil:
				status = worseStatus(status, scenario.Inconclusive)
				reasons = append(reasons, where+": not run")
			case run.Verdict.Status != scenario.Pass:
				status = worseStatus(status, run.Verdict.Status)
				reasons = append(reasons, where+": "+string(run.Verdict.Status))
			case run.Interrupted:
				status = worseStatus(status, scenario.Inconclusive)
				reasons = append(reasons, where+": interrupted")
			}
		}
		one.Rows = versionRowsOf(results)
		v.Changes = append(v.Changes, changes(name, v.Columns, one, results)...)
		v.Scenarios = append(v.Scenarios, one)
	}
	if v.Scenarios == nil {
		v.Scenarios = []VersionsOfOne{}
	}
	for _, c := range v.Changes {
		// A mode's verdict that changed is already a failed or
		// inconclusive run, with its own reasons.
		if c.Behaviour && !c.Expected && !c.Contradicted && c.Field != "verdict" {
			status = scenario.Fail
			reasons = append(reasons, changeBase(c)+": a change of behaviour no version scope states (expect.versions)")
		}
	}
	v.Verdict = scenario.Verdict{Status: status, Reasons: reasons}
	return v
}

func worseStatus(a, b scenario.Status) scenario.Status {
	rank := map[scenario.Status]int{scenario.Pass: 0, scenario.Inconclusive: 1, scenario.Fail: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// versionColumns names each image's column by its broker's version, or by
// the image when the version is unknown or shared with another image.
func versionColumns(in VersionsInput) []VersionColumn {
	cols := make([]VersionColumn, len(in.Images))
	seen := map[string]int{}
	for i, img := range in.Images {
		cols[i].Image = img
		for _, r := range in.Runs {
			if r.Image == img && r.Result != nil && r.Result.BrokerVersion != "" && cols[i].BrokerVersion == "" {
				cols[i].BrokerVersion = r.Result.BrokerVersion
			}
			if r.Image == img && r.Result != nil && r.Result.BrokerFeatures != nil && cols[i].Features == nil {
				cols[i].Features = r.Result.BrokerFeatures
			}
		}
		seen[versionNumber(cols[i].BrokerVersion)]++
	}
	for i := range cols {
		cols[i].Name = versionNumber(cols[i].BrokerVersion)
		if cols[i].Name == "" || seen[cols[i].Name] > 1 {
			cols[i].Name = cols[i].Image
		}
		if cols[i].Name == "" {
			cols[i].Name = "broker" // --uri: no image, and no version known
		}
	}
	return cols
}

// versionNumber is the version number of a broker version as results
// record it ("RabbitMQ 4.0.5" → "4.0.5"): its last word that starts with a
// digit, else the whole text.
func versionNumber(v string) string {
	fields := strings.Fields(v)
	for i := len(fields) - 1; i >= 0; i-- {
		if f := fields[i]; f[0] >= '0' && f[0] <= '9' {
			return f
		}
	}
	return v
}

// versionRowsOf lists, per mode (matrix cell) in run order, every value
// that exists on some column, then the mode's verdict.
func versionRowsOf(results []*scenario.Result) []VersionRow {
	type key struct {
		label string
		mode  scenario.Mode
	}
	var order []key
	groups := make([]map[string]runGroup, len(results))
	for i, r := range results {
		groups[i] = map[string]runGroup{}
		if r == nil {
			continue
		}
		for _, g := range runGroups(r) {
			groups[i][g.label] = g
			if k := (key{g.label, g.mode}); !slices.Contains(order, k) {
				order = append(order, k)
			}
		}
	}
	rows := []VersionRow{}
	for _, k := range order {
		for _, spec := range versionRows {
			row := VersionRow{Group: k.label, Mode: k.mode, Field: spec.field, Label: spec.label,
				Values: make([]*float64, len(results)), Texts: make([]string, len(results))}
			exists := false
			for i := range results {
				g, ok := groups[i][k.label]
				if !ok || len(g.runs) == 0 {
					row.Texts[i] = "-"
					continue
				}
				val, text, ok := spec.value(g)
				if !ok {
					row.Texts[i] = "n/a"
					continue
				}
				exists = true
				row.Texts[i] = text
				if text != "-" {
					row.Values[i] = &val
				}
			}
			if exists {
				rows = append(rows, row)
			}
		}
		row := VersionRow{Group: k.label, Mode: k.mode, Field: "verdict", Label: "verdict",
			Values: make([]*float64, len(results)), Texts: make([]string, len(results))}
		for i := range results {
			row.Texts[i] = "-"
			g, ok := groups[i][k.label]
			if !ok {
				continue
			}
			if len(g.runs) == 0 {
				row.Texts[i] = "not run"
				continue
			}
			st := scenario.Pass
			for _, m := range g.runs {
				st = worseStatus(st, m.Verdict.Status)
			}
			row.Texts[i] = string(st)
		}
		rows = append(rows, row)
	}
	return rows
}

// changes lists, for each row, every column whose value differs from the
// reference column's (the first that ran the scenario), marked expected
// when both columns' version scopes state the field for this mode (and both
// runs passed: else it is contradicted); differences of a run cut short
// are listed, never judged.
func changes(name string, cols []VersionColumn, one VersionsOfOne, results []*scenario.Result) []VersionChange {
	ref := slices.IndexFunc(results, func(r *scenario.Result) bool { return r != nil })
	if ref < 0 {
		return nil
	}
	spec := map[string]rowSpec{}
	for _, s := range versionRows {
		spec[s.field] = s
	}
	// ran[group][i]: the group's mode ran on column i (its verdict row
	// has a verdict): a mode that did not run on one side changed nothing.
	// failed[group][i]: the mode failed its expectations on column i, so
	// a value its version scope states is not borne out there.
	ran, failed := map[string][]bool{}, map[string][]bool{}
	for _, row := range one.Rows {
		if row.Field == "verdict" {
			ran[row.Group] = make([]bool, len(results))
			failed[row.Group] = make([]bool, len(results))
			for i, t := range row.Texts {
				ran[row.Group][i] = t != "-" && t != "not run"
				failed[row.Group][i] = t == string(scenario.Fail)
			}
		}
	}
	var out []VersionChange
	for _, row := range one.Rows {
		for i := range results {
			if i == ref || results[i] == nil || row.Texts[i] == row.Texts[ref] || !ran[row.Group][i] || !ran[row.Group][ref] {
				continue
			}
			c := VersionChange{Scenario: name, Group: row.Group, Field: row.Field, Label: row.Label,
				Column: cols[i].Name, Reference: cols[ref].Name, From: row.Texts[ref], To: row.Texts[i]}
			if spec[row.Field].ratio && row.Values[ref] != nil && row.Values[i] != nil && *row.Values[ref] > 0 {
				r := *row.Values[i] / *row.Values[ref]
				if row.Field != "lost" && row.Field != "unconfirmed_missing" && r < ChangeRatio && r > 1/ChangeRatio {
					continue // noise, not a change
				}
				r = math.Round(r*100) / 100
				c.Ratio = &r
			}
			// Expected only when each version's own scope states the
			// field: a value one side states says nothing of the other's.
			statedHere, because := stated(results[i], row)
			statedRef, becauseRef := stated(results[ref], row)
			c.Expected = statedHere && statedRef
			if c.Expected {
				c.Because = because
			}
			if c.Expected && (failed[row.Group][i] || failed[row.Group][ref]) {
				// Stated, but a run failed its expectations: the value a
				// scope states is not the one measured.
				c.Expected, c.Contradicted = false, true
				if failed[row.Group][ref] && !failed[row.Group][i] {
					c.Because = becauseRef
				}
			}
			// A run cut short (Ctrl-C) measured less than it set out to:
			// its differences are listed, never judged.
			c.Behaviour = BehaviourFields[row.Field] && !results[i].Interrupted && !results[ref].Interrupted
			out = append(out, c)
		}
	}
	return out
}

// stated reports whether r's version scope states the row's field for its
// mode ("MODE.FIELD"), and its because.
func stated(r *scenario.Result, row VersionRow) (bool, string) {
	if r == nil || !r.VersionScope.States(row.Mode, row.Field) {
		return false, ""
	}
	return true, r.VersionScope.Because
}

// VersionsJSON writes v as indented JSON (versions.json).
func VersionsJSON(w io.Writer, v *Versions) error {
	return sticky(w, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	})
}

// ValidateVersions checks that data is a versions.json matching
// reports/schemas/versions.v1.schema.json.
func ValidateVersions(data []byte) error {
	sch, err := compiledVersions()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if ie := duplicateKey(data); ie != nil {
		return ie
	}
	return sch.Validate(doc)
}

// DecodeVersions reads a versions.json: ValidateVersions, then a strict
// decode (no field the Go types lack; a number out of a field's range is
// an *InvalidResultError with its line and column). Its strings are as
// stored: redact before printing.
func DecodeVersions(data []byte) (*Versions, error) {
	if err := ValidateVersions(data); err != nil {
		return nil, err
	}
	var v Versions
	if err := strictDecode(data, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// VersionsSummary writes the terminal report, every line at most Width
// display columns: the images, one table per scenario (its main values per
// mode, one column per version), the verdict per version per scenario and
// what changed.
func VersionsSummary(w io.Writer, v *Versions) error {
	return sticky(w, func(w io.Writer) error { return writeVersionsText(w, v, false) })
}

// VersionsWide writes the terminal report with every row, the image under
// each version in the header, lines as wide as they come.
func VersionsWide(w io.Writer, v *Versions) error {
	return sticky(w, func(w io.Writer) error { return writeVersionsText(w, v, true) })
}

func writeVersionsText(w io.Writer, v *Versions, wide bool) error {
	title := fmt.Sprintf("versions: %d %s on %d %s", len(v.Scenarios), plural(len(v.Scenarios), "scenario", "scenarios"), len(v.Columns), plural(len(v.Columns), "image", "images"))
	if v.Group != "" {
		title = v.Group + " — " + title
	}
	writeWrapped(w, "", title, 2)
	nameW := 0
	for _, c := range v.Columns {
		nameW = max(nameW, twwidth.Width(c.Name))
	}
	if !wide {
		for _, c := range v.Columns {
			if c.Name != c.Image {
				fmt.Fprintln(w, cut(fmt.Sprintf("  %-*s  %s", nameW, c.Name, c.Image)))
			}
		}
	}
	for _, s := range v.Scenarios {
		fmt.Fprintln(w)
		if err := writeColumns(w, scenarioColumns(v, s, wide), wide); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	cols := []column{{header: "verdict"}}
	for _, c := range v.Columns {
		cols = append(cols, column{header: c.Name})
	}
	for _, s := range v.Scenarios {
		cols[0].cells = append(cols[0].cells, s.Scenario)
		for i, r := range s.Runs {
			cols[i+1].cells = append(cols[i+1].cells, runStatus(r))
		}
	}
	if err := writeColumns(w, cols, wide); err != nil {
		return err
	}
	for _, s := range v.Scenarios {
		for i, r := range s.Runs {
			if r == nil {
				continue
			}
			for _, reason := range r.Verdict.Reasons {
				writeWrapped(w, "  - ", fmt.Sprintf("%s on %s: %s", s.Scenario, v.Columns[i].Name, reason), 4)
			}
			if vs := r.VersionScope; vs != nil && vs.Finding != "" {
				// A broker finding: the version differs from its documentation.
				writeWrapped(w, "  finding: ", fmt.Sprintf("%s on %s: %s (because: %s)", s.Scenario, v.Columns[i].Name, vs.Finding, vs.Because), 4)
			}
		}
	}
	fmt.Fprintln(w)
	for _, line := range changeLines(v, wide) {
		writeWrapped(w, "", line, 2)
	}
	verdict := "verdict: " + strings.ToUpper(string(v.Verdict.Status))
	if v.Interrupted {
		verdict += " (interrupted: the report holds what ran)"
	}
	fmt.Fprintln(w, verdict)
	for _, r := range v.Verdict.Reasons {
		writeWrapped(w, "  - ", r, 4)
	}
	return nil
}

// scenarioColumns is one scenario's table: its mode and value names, then
// a column per version (the default table keeps summaryFields; wide heads
// each column with its image too).
func scenarioColumns(v *Versions, s VersionsOfOne, wide bool) []column {
	cols := []column{{header: s.Scenario}, {header: ""}}
	for _, c := range v.Columns {
		h := c.Name
		if wide && c.Name != c.Image {
			h += "\n" + c.Image
		}
		cols = append(cols, column{header: h, right: true})
	}
	lastGroup := ""
	for _, r := range s.Rows {
		if r.Field == "verdict" {
			continue
		}
		if !wide {
			optional, shown := summaryFields[r.Field]
			if !shown || (optional && !slices.ContainsFunc(r.Texts, func(t string) bool { return t != "0" && t != "-" && t != "n/a" })) {
				continue
			}
		}
		group := ""
		if r.Group != lastGroup {
			group, lastGroup = r.Group, r.Group
		}
		for i, cell := range append([]string{group, r.Label}, r.Texts...) {
			cols[i].cells = append(cols[i].cells, cell)
		}
	}
	if len(cols[0].cells) == 0 {
		for i := range cols {
			cols[i].cells = append(cols[i].cells, "")
		}
		cols[0].cells[0] = "(no mode ran)"
	}
	return cols
}

// writeColumns renders cols as a borderless table, each line cut to Width
// unless wide.
func writeColumns(w io.Writer, cols []column, wide bool) error {
	out, err := renderCompact(cols)
	if err != nil {
		return err
	}
	for l := range strings.SplitSeq(strings.TrimSuffix(string(out), "\n"), "\n") {
		if !wide {
			l = cut(l)
		}
		fmt.Fprintln(w, l)
	}
	return nil
}

// runStatus is a run's verdict for the verdict table.
func runStatus(r *VersionsRun) string {
	switch {
	case r == nil:
		return "not run"
	case r.Interrupted && r.Verdict.Status != scenario.Fail:
		return "INTERRUPTED"
	}
	return strings.ToUpper(string(r.Verdict.Status))
}

// notRun reports whether some scenario did not run on some image.
func notRun(v *Versions) bool {
	for _, one := range v.Scenarios {
		if slices.Contains(one.Runs, nil) {
			return true
		}
	}
	return false
}

// changeLines is the "What changed" section: first every change of a
// behaviour the broker version decides, marked expected (with its
// because) or NOT STATED; then the measurements that differ (rates,
// latencies, counts that vary with a fault's timing): listed when all is
// set, else counted in one line that says where the list is.
func changeLines(v *Versions, all bool) []string {
	if len(v.Columns) < 2 {
		return []string{"What changed: nothing to compare (one image)"}
	}
	if len(v.Changes) == 0 {
		if notRun(v) {
			return []string{"What changed: nothing among the runs that ran (some did not run: see the verdict)"}
		}
		return []string{"What changed: nothing: every value is the same on every version"}
	}
	var behaviour, measured []string
	for _, c := range v.Changes {
		if c.Behaviour {
			behaviour = append(behaviour, "- "+changeText(c))
		} else {
			measured = append(measured, "- "+changeBase(c))
		}
	}
	lines := []string{"What changed in behaviour:"}
	if len(behaviour) == 0 {
		lines[0] += " nothing"
	}
	lines = append(lines, behaviour...)
	switch {
	case len(measured) == 0:
	case all:
		lines = append(lines, fmt.Sprintf("Measured, not judged (rates, latencies and counts that vary with a fault's timing; rate and p99 listed when they moved by ×%s or more):", trimFloat(ChangeRatio)))
		lines = append(lines, measured...)
	default:
		lines = append(lines, fmt.Sprintf("Measured, not judged: %d more differences in rates, latencies and counts that vary with a fault's timing (-o wide lists them)", len(measured)))
	}
	return lines
}

func changeText(c VersionChange) string {
	s := changeBase(c)
	switch {
	case c.Expected:
		return s + ": expected (because: " + c.Because + ")"
	case c.Field == "verdict":
		return s + " (see the verdict)"
	case c.Contradicted:
		return s + ": stated by a version scope, but the run failed it (see its verdict)"
	case c.Behaviour:
		return s + ": NOT STATED by any version scope: fails"
	}
	return s
}

// changeBase is a change in words without its mark: "scenario · mode ·
// value: FROM on REF, TO on COLUMN (×ratio)".
func changeBase(c VersionChange) string {
	s := fmt.Sprintf("%s · %s · %s: %s on %s, %s on %s", c.Scenario, c.Group, c.Label, c.From, c.Reference, c.To, c.Column)
	if c.Ratio != nil {
		s += fmt.Sprintf(" (×%s)", trimFloat(*c.Ratio))
	}
	return s
}

// trimFloat formats a ratio with at most two decimals.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// VersionsMarkdown writes versions.md: the images, one table per scenario
// with every row, the verdict per version per scenario and what changed.
func VersionsMarkdown(w io.Writer, v *Versions) error {
	return sticky(w, func(w io.Writer) error {
		title := "Broker versions side by side"
		if v.Group != "" {
			title = v.Group + ": broker versions side by side"
		}
		fmt.Fprintf(w, "# %s\n\n", title)
		fmt.Fprintf(w, "- **Command**: %s\n", code(v.Command))
		fmt.Fprintf(w, "- **Started**: %s\n", v.StartedAt.UTC().Format(time.RFC3339))
		fmt.Fprintf(w, "- **Verdict**: %s", strings.ToUpper(string(v.Verdict.Status)))
		if v.Interrupted {
			fmt.Fprint(w, " (interrupted: the report holds what ran)")
		}
		fmt.Fprintln(w)
		for _, r := range v.Verdict.Reasons {
			fmt.Fprintf(w, "  - %s\n", cell(r))
		}
		fmt.Fprintln(w, "\n| column | image | broker version |\n|---|---|---|")
		for _, c := range v.Columns {
			bv := c.BrokerVersion
			if bv == "" {
				bv = "unknown"
			}
			fmt.Fprintf(w, "| %s | %s | %s |\n", cell(c.Name), code(c.Image), cell(bv))
		}
		if err := featuresMarkdown(w, v); err != nil {
			return err
		}
		for _, s := range v.Scenarios {
			fmt.Fprintf(w, "\n## %s\n\n", s.Scenario)
			header := []string{"mode · value"}
			for _, c := range v.Columns {
				header = append(header, c.Name)
			}
			var rows [][]string
			for _, r := range s.Rows {
				rows = append(rows, append([]string{r.Group + " · " + r.Label}, r.Texts...))
			}
			if len(rows) == 0 {
				fmt.Fprintln(w, "No mode ran.")
			} else if err := table(w, true, header, rows); err != nil {
				return err
			}
			fmt.Fprintln(w)
			for i, r := range s.Runs {
				if r == nil {
					fmt.Fprintf(w, "- %s: not run\n", cell(v.Columns[i].Name))
					continue
				}
				fmt.Fprintf(w, "- %s: %s, run %s in %s", cell(v.Columns[i].Name), runStatus(r), code(r.RunID), code(r.Dir))
				if vs := r.VersionScope; vs != nil && vs.When != "" {
					fmt.Fprintf(w, "; judged by the expectations for %s (because: %s)", code(vs.When), cell(vs.Because))
					if vs.Finding != "" {
						fmt.Fprintf(w, "; finding: %s", cell(vs.Finding))
					}
				}
				fmt.Fprintln(w)
				for _, reason := range r.Verdict.Reasons {
					fmt.Fprintf(w, "  - %s\n", cell(reason))
				}
			}
		}
		fmt.Fprintln(w, "\n## Verdict per version")
		fmt.Fprintln(w)
		header := []string{"scenario"}
		for _, c := range v.Columns {
			header = append(header, c.Name)
		}
		var rows [][]string
		for _, s := range v.Scenarios {
			row := []string{s.Scenario}
			for _, r := range s.Runs {
				row = append(row, runStatus(r))
			}
			rows = append(rows, row)
		}
		if len(rows) > 0 {
			if err := table(w, true, header, rows); err != nil {
				return err
			}
		}
		fmt.Fprintln(w, "\n## What changed")
		lines := changeLines(v, true)
		if len(lines) == 1 {
			fmt.Fprintln(w, "\n"+strings.TrimPrefix(lines[0], "What changed: "))
			return nil
		}
		for _, line := range lines {
			if strings.HasPrefix(line, "- ") {
				fmt.Fprintf(w, "- %s\n", cell(strings.TrimPrefix(line, "- ")))
			} else {
				title := strings.TrimPrefix(strings.TrimSuffix(line, ":"), "What changed in ")
				fmt.Fprintf(w, "\n### %s%s\n\n", strings.ToUpper(title[:1]), title[1:])
			}
		}
		return nil
	})
}

// featuresMarkdown writes versions.md's table of deprecated features and
// differing feature flags (featureRows); nothing when no image's features
// were listed.
func featuresMarkdown(w io.Writer, v *Versions) error {
	header, rows := featureRows(v)
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\n## Deprecated features and feature flags\n\nAs each broker listed them (`rabbitmqctl list_deprecated_features`, 3.13 and later; `list_feature_flags`): every deprecated feature, and the feature flags whose state differs between the images. What a version permits is read from its image, not its release notes.")
	fmt.Fprintln(w)
	return table(w, true, header, rows)
}

// featureRows is the deprecated features and differing feature flags of
// the columns that listed them: every deprecated feature any broker listed
// ("deprecated: NAME", its phase per column; "-" where a broker that
// listed its deprecated features did not list it, "no list" for a version
// before 3.13, "not listed" where the image's features were not read),
// then each feature flag whose state is not the same on every column that
// listed its flags ("flag: NAME"). No rows when no column listed its
// features.
func featureRows(v *Versions) (header []string, rows [][]string) {
	header = []string{"feature"}
	listed := false
	for _, c := range v.Columns {
		header = append(header, c.Name)
		listed = listed || c.Features != nil
	}
	if !listed {
		return header, nil
	}
	names := func(get func(*scenario.BrokerFeatures) map[string]string) []string {
		set := map[string]bool{}
		for _, c := range v.Columns {
			if c.Features != nil {
				for n := range get(c.Features) {
					set[n] = true
				}
			}
		}
		return slices.Sorted(maps.Keys(set))
	}
	dep := func(f *scenario.BrokerFeatures) map[string]string { return f.DeprecatedFeatures }
	for _, n := range names(dep) {
		row := []string{"deprecated: " + n}
		for _, c := range v.Columns {
			switch {
			case c.Features == nil:
				row = append(row, "not listed")
			case c.Features.DeprecatedFeatures == nil:
				row = append(row, "no list")
			case c.Features.DeprecatedFeatures[n] == "":
				row = append(row, "-")
			default:
				row = append(row, c.Features.DeprecatedFeatures[n])
			}
		}
		rows = append(rows, row)
	}
	for _, n := range names(func(f *scenario.BrokerFeatures) map[string]string { return f.FeatureFlags }) {
		row := []string{"flag: " + n}
		for _, c := range v.Columns {
			st := "not listed"
			if c.Features != nil {
				st = cmp.Or(c.Features.FeatureFlags[n], "-")
			}
			row = append(row, st)
		}
		var states []string
		for i, c := range v.Columns {
			if c.Features != nil {
				states = append(states, row[i+1])
			}
		}
		if slices.ContainsFunc(states, func(s string) bool { return s != states[0] }) {
			rows = append(rows, row)
		}
	}
	return header, rows
}
