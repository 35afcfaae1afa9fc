package cmd

import (
	"fmt"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// findScenario is f.Find with a suggestion: a name that is one or two
// edits from a scenario's (or the start of only one) gets "file: no
// scenario named "kill-mid-bust"; did you mean kill-mid-burst?"; any other
// unknown name gets the list of names the file has (or, past
// maxNamesListed, the list command that prints them).
func findScenario(f *scenario.File, file, name string) (*scenario.Scenario, error) {
	names := make([]string, len(f.Scenarios))
	for i := range f.Scenarios {
		if f.Scenarios[i].Name == name {
			return &f.Scenarios[i], nil
		}
		names[i] = f.Scenarios[i].Name
	}
	if s := scenario.Suggest(name, names); s != "" {
		return nil, fmt.Errorf("%s: no scenario named %q; did you mean %s?", file, name, s)
	}
	if len(names) > maxNamesListed {
		list := "rmqtorture list"
		if file != shippedName {
			list += " -f " + file
		}
		return nil, fmt.Errorf("%s: no scenario named %q; `%s` names its %d scenarios", file, name, list, len(names))
	}
	return nil, fmt.Errorf("%s: no scenario named %q (have: %s)", file, name, strings.Join(names, ", "))
}

// maxNamesListed is how many scenario names an unknown name's error lists;
// a file with more (the built-in one has dozens) points to list instead,
// so the error stays a line, not a paragraph.
const maxNamesListed = 10
