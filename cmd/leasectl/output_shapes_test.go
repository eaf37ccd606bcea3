package main

// The JSON shapes the tests read, written out here rather than taken from
// internal/cli: a field renamed there breaks a script that reads
// leasectl's JSON, and so fails these tests.

// policyJSON is one policy of "policy show --output json".
type policyJSON struct {
	Queue                   string  `json:"queue"`
	LeaseDurationSeconds    float64 `json:"lease_duration_seconds"`
	RenewalIntervalSeconds  float64 `json:"renewal_interval_seconds"`
	MaxClaimLifetimeSeconds float64 `json:"max_claim_lifetime_seconds"`
	RenewalEnabled          bool    `json:"renewal_enabled"`
	ChangedAt               string  `json:"changed_at"`
	ChangedByRole           string  `json:"changed_by_role"`
}

// healthJSON is one queue of "health --output json".
type healthJSON struct {
	Queue                  string   `json:"queue"`
	RunningJobs            int64    `json:"running_jobs"`
	ExpiringWithinInterval int64    `json:"expiring_within_interval"`
	ExpiredAwaitingReclaim int64    `json:"expired_awaiting_reclaim"`
	ReclaimsLastHour       int64    `json:"reclaims_last_hour"`
	FailoverReclaims       int64    `json:"failover_reclaims_last_hour"`
	StaleRenewalsLastHour  int64    `json:"stale_renewals_last_hour"`
	StaleReleasesLastHour  int64    `json:"stale_releases_last_hour"`
	OldestLeaseAgeSeconds  *float64 `json:"oldest_lease_age_seconds"`
	DatabaseTime           string   `json:"database_time"`
	QueuedJobs             int64    `json:"queued_jobs"`
	RetryScheduledJobs     int64    `json:"retry_scheduled_jobs"`
	FailedLastHour         int64    `json:"failed_last_hour"`
	OldestDueAgeSeconds    *float64 `json:"oldest_due_age_seconds"`
}
