package cmd

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpWidth is the width, in columns, that --help wraps its flag lists to.
const helpWidth = 100

// groupAnnotation holds the title of the --help group a flag is listed in.
const groupAnnotation = "rmqtorture-help-group"

// flagGroup is one heading of a command's --help and the flags under it,
// in the order listed.
type flagGroup struct {
	title string
	flags []string
}

// runFlagGroups sorts run's flags by what they set, the way a load tool's
// user looks for them (PerfTest's and omq's help group them the same way).
var runFlagGroups = []flagGroup{
	{"Scenarios", []string{"file", "all"}},
	{"Load", []string{"messages", "duration", "mode", "window", "publishers", "consumers", "prefetch", "rate", "size", "queue-type"}},
	{"Faults", []string{"kill-at", "down", "seed", "allow-commands"}},
	{"Broker", []string{"image", "images", "official-registry", "nodes", "container", "containers", "uri", "port", "broker-address", "keep"}},
	{"Matrix", []string{"queue-types", "persistence", "repeat"}},
	{"Output and verdict", []string{"output", "out", "fail-on-missing", "junit", "summary-file", "metrics-file", "metrics-listen", "bucket"}},
	{"Split runs (one broker, several processes)", []string{"load-only", "drain-only", "part", "parts", "run-id"}},
}

// groupFlags files c's flags under groups for --help, in the groups' order
// and, within each, the order listed. A name that is no flag of c is a
// mistake of this file: it panics.
func groupFlags(c *cobra.Command, groups []flagGroup) {
	for gi, g := range groups {
		for fi, name := range g.flags {
			if err := c.Flags().SetAnnotation(name, groupAnnotation, []string{g.title, strconv.Itoa(gi), strconv.Itoa(fi)}); err != nil {
				panic(fmt.Sprintf("help group %q: %v", g.title, err))
			}
		}
	}
}

// groupedFlagUsages renders c's own flags for --help, wrapped to helpWidth:
// under each group's heading in the order groupFlags gave, then the rest
// under "Other flags", or all under "Flags" when none is grouped.
func groupedFlagUsages(c *cobra.Command) string {
	type entry struct {
		f      *pflag.Flag
		gi, fi int
	}
	var grouped []entry
	var rest []*pflag.Flag
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		a := f.Annotations[groupAnnotation]
		if len(a) != 3 {
			rest = append(rest, f)
			return
		}
		gi, _ := strconv.Atoi(a[1])
		fi, _ := strconv.Atoi(a[2])
		grouped = append(grouped, entry{f, gi, fi})
	})
	slices.SortFunc(grouped, func(a, b entry) int { return cmp.Or(cmp.Compare(a.gi, b.gi), cmp.Compare(a.fi, b.fi)) })
	var b strings.Builder
	section := func(title string, flags []*pflag.Flag) {
		fs := pflag.NewFlagSet(title, pflag.ContinueOnError)
		fs.SortFlags = false
		for _, f := range flags {
			fs.AddFlag(f)
		}
		fmt.Fprintf(&b, "%s:\n%s\n", title, fs.FlagUsagesWrapped(helpWidth))
	}
	for i := 0; i < len(grouped); {
		j := i
		var flags []*pflag.Flag
		for ; j < len(grouped) && grouped[j].gi == grouped[i].gi; j++ {
			flags = append(flags, grouped[j].f)
		}
		section(grouped[i].f.Annotations[groupAnnotation][0], flags)
		i = j
	}
	if len(rest) > 0 {
		title := "Flags"
		if len(grouped) > 0 {
			title = "Other flags"
		}
		section(title, rest)
	}
	return strings.TrimRight(b.String(), " \n")
}

// wrappedFlagUsages renders fs for --help, wrapped to helpWidth.
func wrappedFlagUsages(fs *pflag.FlagSet) string {
	return strings.TrimRight(fs.FlagUsagesWrapped(helpWidth), " \n")
}

// addHelpTemplateFuncs registers useGroupedHelp's template functions with
// cobra, once per process: cobra keeps them in one package-level map, and
// roots are built concurrently (tests run several Execute at once).
var addHelpTemplateFuncs = sync.OnceFunc(func() {
	cobra.AddTemplateFunc("groupedFlagUsages", groupedFlagUsages)
	cobra.AddTemplateFunc("wrappedFlagUsages", wrappedFlagUsages)
})

// useGroupedHelp makes every command's --help list its flags grouped and
// wrapped to helpWidth: cobra's own usage template with its two flag lists
// replaced.
func useGroupedHelp(root *cobra.Command) {
	addHelpTemplateFuncs()
	t := root.UsageTemplate()
	for old, repl := range map[string]string{
		"\n\nFlags:\n{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}": "\n\n{{groupedFlagUsages .}}",
		"{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}":         "{{wrappedFlagUsages .InheritedFlags}}",
	} {
		if !strings.Contains(t, old) {
			panic("cobra's usage template changed: no " + old)
		}
		t = strings.Replace(t, old, repl, 1)
	}
	root.SetUsageTemplate(t)
}
