package reports

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Version-scoped expectations (scenario.AppliedVersionScope) in the
// reports: which scope of expect.versions judged the run, and its finding
// (how this broker version differs from RabbitMQ's documentation), shown
// as a broker finding beside the verdict, never as one of its reasons.

// versionScopeText says which version scope judged r ("" when the scenario
// states none or none matched: a warning says so then); its source is in
// report.md, result.json and any reason it failed.
func versionScopeText(r *scenario.Result) string {
	v := r.VersionScope
	if v == nil || v.When == "" {
		return ""
	}
	text := fmt.Sprintf("%s matches expect.versions %q", v.BrokerVersion, v.When)
	if len(v.Stated) > 0 {
		text += ", which states " + strings.Join(v.Stated, ", ")
	}
	return text
}

// versionFindingText is the matched scope's finding as a broker finding
// ("" without one).
func versionFindingText(r *scenario.Result) string {
	v := r.VersionScope
	if v == nil || v.Finding == "" {
		return ""
	}
	return fmt.Sprintf("%s (expected on RabbitMQ %s; a broker finding, not an rmqtorture failure): %s", v.BrokerVersion, v.When, v.Finding)
}

// versionScopeLines writes the scope and its finding as wrapped lines for
// the terminal headline.
func versionScopeLines(w io.Writer, r *scenario.Result) {
	if t := versionScopeText(r); t != "" {
		writeWrapped(w, "version: ", t, 2)
	}
	if t := versionFindingText(r); t != "" {
		writeWrapped(w, "broker finding: ", t, 2)
	}
}

// versionScopePlain writes them unwrapped (the wide table).
func versionScopePlain(w io.Writer, r *scenario.Result) {
	if t := versionScopeText(r); t != "" {
		fmt.Fprintf(w, "version: %s\n", t)
	}
	if t := versionFindingText(r); t != "" {
		fmt.Fprintf(w, "broker finding: %s\n", t)
	}
}

// versionScopeSection writes report.md's section on the version scope and
// its finding (nothing when no scope matched).
func versionScopeSection(w io.Writer, r *scenario.Result) {
	v := r.VersionScope
	if v == nil || v.When == "" {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\n## Broker version\n\n")
	p("%s matches `expect.versions` range %s: the run was judged with the expectations stated for it", v.BrokerVersion, code(v.When))
	if len(v.Stated) > 0 {
		stated := make([]string, len(v.Stated))
		for i, s := range v.Stated {
			stated[i] = code(s)
		}
		p(" (%s) laid over the unscoped ones", strings.Join(stated, ", "))
	}
	p(". Source: %s\n", v.Because)
	if v.Finding != "" {
		p("\n**Broker finding** (how %s differs from RabbitMQ's documentation; not an rmqtorture failure): %s\n", v.BrokerVersion, v.Finding)
	}
}

// xDeathLine says, under a mode's dead-lettered ids, who dead-lettered
// them: the reason and count of each id's latest x-death entry (nothing
// when none was recorded).
func xDeathLine(w io.Writer, m scenario.ModeResult) {
	if len(m.DeadLetterReasons) == 0 {
		return
	}
	fmt.Fprintf(w, "\nx-death of the dead-lettered ids (latest entry; https://www.rabbitmq.com/docs/dlx#effects): reason %s; count %s.\n",
		valueTimes(m.DeadLetterReasons), valueTimes(m.XDeathCounts))
}

// valueTimes writes a value → ids map as "v × n" pairs in value order.
func valueTimes(h map[string]int) string {
	keys := slices.Sorted(maps.Keys(h))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s × %s", code(k), num(h[k]))
	}
	return strings.Join(parts, ", ")
}
