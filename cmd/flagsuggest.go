package cmd

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// badFlagValue is pflag's error for a value its flag type cannot parse:
// `invalid argument "abc" for "--messages" flag: strconv.ParseInt: …`.
var badFlagValue = regexp.MustCompile(`^invalid argument (".*") for (".*") flag: (.*)$`)

// flagValueKinds say in words what a flag type wants, in place of the Go
// parser's message (strconv.ParseInt: parsing "abc": invalid syntax).
var flagValueKinds = []struct{ prefix, want string }{
	{"strconv.ParseBool", "true or false"},
	{"strconv.ParseInt", "a whole number"},
	{"strconv.ParseUint", "a whole number, 0 or more"},
	{"strconv.ParseFloat", "a number"},
	{"time: ", "a duration with its unit, such as 500ms, 5s or 1m30s"},
}

// suggestFlag is the command tree's flag error function: a mistyped long
// flag ("unknown flag: --mesages") gets "; did you mean --messages?" when
// one of the command's flags is one or two edits away (scenario.Suggest);
// a value its flag type cannot parse says what the flag wants, in words;
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
	if m := badFlagValue.FindStringSubmatch(msg); m != nil {
		for _, k := range flagValueKinds {
			if strings.HasPrefix(m[3], k.prefix) {
				return fmt.Errorf("invalid argument %s for %s flag: want %s", m[1], m[2], k.want)
			}
		}
	}
	if msg == "unknown shorthand flag: 'f' in -f" || msg == "unknown flag: --file" {
		return fmt.Errorf("%w: %s reads no scenario file (-f is a flag of run, list and validate)", err, c.Name())
	}
	return err
}
