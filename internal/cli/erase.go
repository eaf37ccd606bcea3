package cli

import (
	"flag"
	"fmt"
)

// eraseAction is "leasectl erase".
var eraseAction = &action{name: "erase", usage: help("erase"), required: []string{"job", "reason"}, flags: func(fs *flag.FlagSet) runFunc {
	job := fs.Int64("job", 0, "the job's id (required)")
	change := addChangeFlags(fs, "the erasure request's ticket; kept in the control evidence (required)")
	return func(c *call) error {
		if err := change.checkPersonal(); err != nil {
			return err
		}
		a, err := c.openAdmin()
		if err != nil {
			return err
		}
		erased, err := a.ErasePayload(c.ctx, *job, change.record())
		if err != nil {
			return failed(fmt.Sprintf("erase payload of job %d", *job), err)
		}
		if !erased {
			c.printf("job %d: nothing to erase (unknown job, or its payload is already erased)\n", *job)
			return nil
		}
		c.printf("job %d: payload and result documents erased; lifecycle row kept\n", *job)
		return nil
	}
}}
