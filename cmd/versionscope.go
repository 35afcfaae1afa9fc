package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// applyVersionScope returns the scenario as the broker that answered judges
// it: its expect.versions scope for res.BrokerVersion (the version the
// broker reported in its AMQP server-properties, never the image tag) laid
// over expect.modes (scenario.ForBrokerVersion), recorded in
// res.VersionScope. A scenario without version scopes is returned as it is
// and res.VersionScope stays nil. When no scope holds the version, the
// warning goes to stderr and res.Warnings.
func applyVersionScope(c *cobra.Command, s *scenario.Scenario, res *scenario.Result) *scenario.Scenario {
	scoped, applied, warning := s.ForBrokerVersion(res.BrokerVersion)
	res.VersionScope = applied
	if warning != "" {
		fmt.Fprintln(c.ErrOrStderr(), "warning: "+warning)
		res.Warnings = append(res.Warnings, warning)
	}
	return &scoped
}
