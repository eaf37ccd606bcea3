package sqlbundle

import (
	"context"
	"fmt"
)

// Direction is the way a migration run goes: Up to a newer version, Down
// to an older one.
type Direction string

// The two directions of Plan, named as tern names them to OnStart.
const (
	Up   Direction = "up"
	Down Direction = "down"
)

// Plan is what a migration run to a version will do, as Migrator.Plan
// reads it before anything changes.
type Plan struct {
	// Current is the database's version, Target the version the run
	// migrates to.
	Current, Target int32
	// Erasing names, in the order the run reverts them, the migrations
	// whose down part erases control evidence
	// (EvidenceErasingMigrations); empty unless the run is a downgrade
	// through one.
	Erasing []string
}

// TakesExport says whether an evidence export before the run has
// anything to keep: the run erases evidence, or removes the bundle
// (Target 0), which leaves nothing of what an export could read after.
func (p Plan) TakesExport() bool { return len(p.Erasing) > 0 || p.Target == 0 }

// DirectionError is Plan's refusal of a target on the other side of the
// current version: an upgrade to an older version, a downgrade to a newer
// one.
type DirectionError struct {
	// Direction is the direction asked for.
	Direction Direction
	// Target is the version asked for.
	Target int32
	// Current is the database's version.
	Current int32
}

// Error says which way the target lies.
func (e *DirectionError) Error() string {
	if e.Direction == Up {
		return fmt.Sprintf("version %d is below the current version %d: that is a downgrade", e.Target, e.Current)
	}
	return fmt.Sprintf("version %d is above the current version %d: that is an upgrade", e.Target, e.Current)
}

// Plan reads the current version and returns the run in direction to
// version to; a nil to is the default target: Up, the newest version;
// Down, one step back (not below 0). A target on the other side of the
// current version is a *DirectionError; one outside 0 to NewestVersion is
// left to MigrateTo to refuse.
func (m *Migrator) Plan(ctx context.Context, direction Direction, to *int32) (Plan, error) {
	current, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return Plan{}, err
	}
	target := NewestVersion()
	if direction == Down {
		target = max(current-1, 0)
	}
	if to != nil {
		target = *to
	}
	if (direction == Up && target < current) || (direction == Down && target > current) {
		return Plan{}, &DirectionError{Direction: direction, Target: target, Current: current}
	}
	return Plan{Current: current, Target: target, Erasing: m.EvidenceErasingMigrations(current, target)}, nil
}
