package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// suggestFlag is the command tree's flag error function: a mistyped long
// flag ("unknown flag: --mesages") gets "; did you mean --messages?" when
// one of the command's flags is one or two edits away (scenario.Suggest);
// -f on a command that does not read a scenario file says which do. Every
// other flag error is returned as cobra gives it (exit 2 either way).
func suggestFlag(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		var names []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		if s := scenario.Suggest(name, names); s != "" {
			return fmt.Errorf("%w; did you mean --%s?", err, s)
		}
	}
	if msg == "unknown shorthand flag: 'f' in -f" || msg == "unknown flag: --file" {
		return fmt.Errorf("%w: %s reads no scenario file (-f is a flag of run, list and validate)", err, c.Name())
	}
	return err
}
