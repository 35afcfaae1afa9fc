package cmd

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Shipped is the scenario file built into the binary: main embeds the
// repository's scenarios.yaml and sets it before Main runs. Commands that
// read scenarios use it when -f is not given, so `rmqtorture list` and
// `rmqtorture run kill-mid-burst` work from any folder. Nil in a build
// without it (then -f is required).
var Shipped []byte

// shippedName is the name errors in the built-in file carry
// ("scenarios.yaml:12:5: ..."), the file it was built from.
const shippedName = "scenarios.yaml"

// fileValue is the value of -f/--file: it records that the flag was given,
// so that without it the built-in scenarios are read, under the file name
// they were built from.
type fileValue struct{ g *globalOpts }

func (v fileValue) String() string { return v.g.file }
func (v fileValue) Type() string   { return "file" }
func (v fileValue) Set(s string) error {
	v.g.file, v.g.fileSet = s, true
	return nil
}

// addFileFlag adds -f/--file to c, a command that reads scenarios. It is
// not a flag of the root: commands that read no scenario do not offer it.
func addFileFlag(c *cobra.Command, g *globalOpts) {
	fl := c.Flags()
	fl.VarP(fileValue{g}, "file", "f", "scenario file (default: the scenarios built into rmqtorture, as shipped in its "+shippedName+")")
	fl.Lookup("file").DefValue = "" // the help names the built-in file instead
	_ = c.MarkFlagFilename("file", "yaml", "yml")
}

// load reads the scenario file -f names or, without -f, the built-in one.
// Either way g.file names it afterwards, as errors and result.json do.
func (g *globalOpts) load() (*scenario.File, error) {
	var (
		f   *scenario.File
		err error
	)
	switch {
	case g.fileSet:
		f, err = scenario.LoadFile(g.file)
	case Shipped == nil:
		err = errors.New("this rmqtorture was built without its scenarios: name a scenario file with -f")
	default:
		g.file = shippedName
		f, err = scenario.Parse(shippedName, Shipped)
	}
	if err != nil {
		return nil, causeErr(CauseBadScenarioFile, err)
	}
	return f, nil
}
