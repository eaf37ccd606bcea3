package cli

import (
	"flag"

	"github.com/mightyetl/leasefence/goclient"
)

// deploymentRecord is "leasectl deployment record".
var deploymentRecord = &action{name: "deployment record", output: true,
	required: []string{"version", "source", "deployed-by", "ticket", "reason"}, flags: func(fs *flag.FlagSet) runFunc {
		var d goclient.Deployment
		fs.StringVar(&d.Version, "version", "", "deployed application version (required)")
		fs.StringVar(&d.Source, "source", "", "commit or artifact digest it was built from (required)")
		fs.StringVar(&d.DeployedBy, "deployed-by", "", "handle of the person who deployed (required)")
		fs.StringVar(&d.Ticket, "ticket", "", "change ticket, e.g. REL-42 (required)")
		fs.StringVar(&d.Reason, "reason", "", "short reason (required)")
		return func(c *call) error {
			a, err := c.openAdmin()
			if err != nil {
				return err
			}
			if err := a.RecordDeployment(c.ctx, d); err != nil {
				return failed("record deployment", err)
			}
			return c.print(map[string]any{"deployment_version": d.Version, "source_digest": d.Source,
				"deployed_by": d.DeployedBy, "recorded": true}, func() {
				c.printf("recorded deployment version %s\n", d.Version)
			})
		}
	}}
