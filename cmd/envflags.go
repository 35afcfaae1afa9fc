package cmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envPrefix names the environment variables that set flags: every flag of
// every command, RMQTORTURE_ and its long name in capitals with "_" for
// "-" (--messages: RMQTORTURE_MESSAGES; --kill-at: RMQTORTURE_KILL_AT).
const envPrefix = "RMQTORTURE_"

// flagEnv is the environment variable of the flag named name.
func flagEnv(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// envOwnReading lists flags whose variable the command reads itself, with
// rules of its own (RMQTORTURE_URI: its password is masked wherever it is
// quoted), and flags no variable should set.
var envOwnReading = map[string]bool{"uri": true, "help": true, "version": true}

// flagsFromEnv sets every flag of c not given on the command line from its
// environment variable, when set, as if it had been given (a scenario's
// setting gives way to it as to the flag). A value the flag refuses is bad
// input, named by its variable (exit 2), before anything starts.
func flagsFromEnv(c *cobra.Command) error {
	var err error
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || envOwnReading[f.Name] {
			return
		}
		v, ok := os.LookupEnv(flagEnv(f.Name))
		if !ok {
			return
		}
		if serr := c.Flags().Set(f.Name, v); serr != nil {
			err = usageErr(fmt.Errorf("%s=%s: %w (it sets --%s)", flagEnv(f.Name), v, serr, f.Name))
			return
		}
		_ = c.Flags().SetAnnotation(f.Name, envAnnotation, []string{flagEnv(f.Name)})
	})
	return err
}

// envAnnotation marks a flag flagsFromEnv set, with its variable's name.
const envAnnotation = "rmqtorture-from-env"

// envNotes are lines saying which of c's flags their variables set, for a
// bad input that may name such a flag ("--mode x: …" that no command line
// held): "rmqtorture: --mode was set from RMQTORTURE_MODE".
func envNotes(c *cobra.Command) []string {
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if env := f.Annotations[envAnnotation]; len(env) == 1 {
			out = append(out, fmt.Sprintf("rmqtorture: --%s was set from %s", f.Name, env[0]))
		}
	})
	return out
}
