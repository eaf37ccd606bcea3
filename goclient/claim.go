package goclient

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Redacted is what every printed or logged form of a claim shows instead of
// its token.
const Redacted = "[REDACTED]"

// claimToken holds the secret lease_claim_token and the owner id. Claim
// keeps it inside a closure: a reflection-based print of a value that holds
// a Claim in an unexported field bypasses Claim's own methods, and fmt then
// prints a func as an address; it cannot reach what the closure captured
// (a pointer would be followed and printed under a bad verb such as %s).
type claimToken struct {
	uuid  pgtype.UUID
	owner string
}

// sealToken wraps t in the closure Claim stores.
func sealToken(t claimToken) func() claimToken { return func() claimToken { return t } }

// Claim is the private right of this worker to run one job until its lease
// expires: the job id, the secret claim token (unexported, returned once by
// the database) and the owner id, presented together on every renewal and
// terminal write. The token never leaves the value: String, GoString, every
// fmt verb, JSON and slog print "[REDACTED]" in its place, and the owner id
// is left out.
type Claim struct {
	jobID      int64
	queue      string
	generation int64
	attempt    int
	token      func() claimToken
}

// JobID returns the claimed job's job_record_id.
func (c Claim) JobID() int64 { return c.jobID }

// Queue returns the claimed job's queue name.
func (c Claim) Queue() string { return c.queue }

// timeline is the WAL timeline the claim was made on, read from its
// generation: claim_next_jobs raises a generation to its timeline's floor,
// ((timeline - 1) << 40) + 1, and a job's generation grows by one a claim,
// so it stays below the next timeline's floor.
func (c Claim) timeline() int64 { return (c.generation-1)>>40 + 1 }

// FencingGeneration returns lease_fencing_generation: it strictly increases
// with every claim of the job, so an external sink can refuse writes that
// carry an older value than one it has seen.
func (c Claim) FencingGeneration() int64 { return c.generation }

// Attempt returns the attempt number this claim uses (1 for the first claim).
func (c Claim) Attempt() int { return c.attempt }

// tokenValue returns the token for a database call (NULL for a zero Claim).
func (c Claim) tokenValue() pgtype.UUID { return c.secret().uuid }

// ownerValue returns the owner id for a database call ("" for a zero Claim).
func (c Claim) ownerValue() string { return c.secret().owner }

// secret returns the token holder, empty for a zero Claim.
func (c Claim) secret() claimToken {
	if c.token == nil {
		return claimToken{}
	}
	return c.token()
}

// String returns the claim's public fields with the token redacted.
func (c Claim) String() string {
	return fmt.Sprintf("leasefence.Claim{job_record_id: %d, queue: %q, lease_fencing_generation: %d, attempt_number: %d, lease_claim_token: %s}",
		c.jobID, c.queue, c.generation, c.attempt, Redacted)
}

// GoString is String: %#v never shows the token either.
func (c Claim) GoString() string { return c.String() }

// Format makes every fmt verb (%v, %+v, %#v, %s, %x, %d, ...) print String;
// %q prints it quoted.
func (c Claim) Format(f fmt.State, verb rune) { formatRedacted(f, verb, c.String()) }

// MarshalJSON writes the claim's public fields and "[REDACTED]" as the token.
func (c Claim) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		JobRecordID            int64  `json:"job_record_id"`
		QueueName              string `json:"queue_name"`
		LeaseFencingGeneration int64  `json:"lease_fencing_generation"`
		AttemptNumber          int    `json:"attempt_number"`
		LeaseClaimToken        string `json:"lease_claim_token"`
	}{c.jobID, c.queue, c.generation, c.attempt, Redacted})
}

// LogValue makes slog log the claim's public fields and "[REDACTED]".
func (c Claim) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("job_record_id", c.jobID),
		slog.String("queue_name", c.queue),
		slog.Int64("lease_fencing_generation", c.generation),
		slog.Int("attempt_number", c.attempt),
		slog.String("lease_claim_token", Redacted),
	)
}

// formatRedacted writes s for any verb, quoted for %q.
func formatRedacted(f fmt.State, verb rune, s string) {
	if verb == 'q' {
		s = strconv.Quote(s)
	}
	_, _ = io.WriteString(f, s)
}

// Job is a claimed job as the handler sees it: its claim and its payload.
// Like Claim, it never prints or logs the token, and it never prints or logs
// the payload either; read the payload with Payload.
type Job struct {
	claim Claim
	// payload returns the JSON payload; a closure for the same reason as
	// Claim's token.
	payload        func() []byte
	leaseExpiresAt time.Time
	databaseTime   time.Time
	// sentAt is the monotonic time the claim call was sent: the start of
	// the first trust window.
	sentAt time.Time
	// renewalInterval is the policy's renewal interval at claim time.
	renewalInterval time.Duration
	// terms are the lease settings the heartbeat keeps the claim by.
	terms leaseTerms
}

// Claim returns the job's claim, to pass to Complete, Retry, Fail or Release.
func (j Job) Claim() Claim { return j.claim }

// ID returns the job's job_record_id.
func (j Job) ID() int64 { return j.claim.jobID }

// Queue returns the job's queue name.
func (j Job) Queue() string { return j.claim.queue }

// Attempt returns the attempt number (1 for the first claim).
func (j Job) Attempt() int { return j.claim.attempt }

// FencingGeneration returns the claim's lease_fencing_generation.
func (j Job) FencingGeneration() int64 { return j.claim.generation }

// Payload returns the job's JSON payload as the producer enqueued it
// (PostgreSQL's jsonb normal form). Never log it.
func (j Job) Payload() []byte {
	if j.payload == nil {
		return nil
	}
	return j.payload()
}

// LeaseExpiresAt returns the expiry the claim was granted, in database time.
func (j Job) LeaseExpiresAt() time.Time { return j.leaseExpiresAt }

// DatabaseTime returns the database's clock_timestamp() at the claim.
func (j Job) DatabaseTime() time.Time { return j.databaseTime }

// RenewalInterval returns how often the heartbeat renews this claim: its
// queue policy's renewal interval at claim time, or the client's
// Config.RenewalInterval bound when that is shorter.
func (j Job) RenewalInterval() time.Duration { return j.terms.interval }

// String returns the job's public fields; no token, no payload.
func (j Job) String() string {
	return fmt.Sprintf("leasefence.Job{job_record_id: %d, queue: %q, lease_fencing_generation: %d, attempt_number: %d, lease_claim_token: %s, job_payload: %s}",
		j.claim.jobID, j.claim.queue, j.claim.generation, j.claim.attempt, Redacted, Redacted)
}

// GoString is String.
func (j Job) GoString() string { return j.String() }

// Format makes every fmt verb print String; %q prints it quoted.
func (j Job) Format(f fmt.State, verb rune) { formatRedacted(f, verb, j.String()) }

// MarshalJSON writes the job's public fields; token and payload are redacted.
func (j Job) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Claim      Claim  `json:"claim"`
		JobPayload string `json:"job_payload"`
	}{j.claim, Redacted})
}

// LogValue makes slog log the job's public fields; token and payload are redacted.
func (j Job) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("claim", j.claim), slog.String("job_payload", Redacted))
}

// JobStatus is a job's lifecycle status as the database names it.
type JobStatus string

// The job statuses (docs/sql-api.md, job_lifecycle_state).
const (
	StatusQueued         JobStatus = "QUEUED"
	StatusRunning        JobStatus = "RUNNING"
	StatusRetryScheduled JobStatus = "RETRY_SCHEDULED"
	StatusSucceeded      JobStatus = "SUCCEEDED"
	StatusFailed         JobStatus = "FAILED"
	StatusCancelled      JobStatus = "CANCELLED"
)

// JobState is the payload-blind view of a job that job_lifecycle_state
// returns: no payload, token, digest or owner.
type JobState struct {
	// Status is the job's lifecycle status.
	Status JobStatus
	// AttemptNumber is how many claims the job has used.
	AttemptNumber int
	// MaxAttempts is how many claims the job may use.
	MaxAttempts int
	// FencingGeneration is the newest claim's lease_fencing_generation.
	FencingGeneration int64
	// LeaseExpiresAt is the current claim's expiry (zero when there is none).
	LeaseExpiresAt time.Time
	// RenewalCount is how many renewals the current claim has had.
	RenewalCount int64
	// FailureReasonCode is the bounded reason of the last failure ("" if none).
	FailureReasonCode string
}
