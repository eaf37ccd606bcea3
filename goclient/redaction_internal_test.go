package goclient

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/require"
)

// The claim token and the payload never appear in any printed, marshalled
// or logged form of a Claim or Job, the owner id neither; the public fields do.
func TestClaimAndJobRedactTokenPayloadAndOwnerEverywhere(t *testing.T) {
	raw := [16]byte{0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xed, 0xfa, 0xce}
	claim := Claim{jobID: 4242, queue: "etl.orders", generation: 7, attempt: 2,
		token: sealToken(claimToken{uuid: pgtype.UUID{Bytes: raw, Valid: true}, owner: "worker-secret-owner"})}
	job := Job{claim: claim, payload: func() []byte { return []byte(`{"customer_email": "kim@example.com"}`) }}

	hexToken := hex.EncodeToString(raw[:])
	dashed := fmt.Sprintf("%x-%x-%x-%x-%x", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16])
	secrets := []string{hexToken, dashed, strings.ToUpper(hexToken), "worker-secret-owner", "kim@example.com",
		"222, 173, 190, 239", "[222 173 190 239", "3q2+7w"} // decimal bytes, base64
	var outputs []string
	for _, v := range []any{claim, &claim, job, &job, []Claim{claim}, map[string]Job{"j": job},
		struct{ C Claim }{claim}, struct{ c Claim }{claim}, struct{ j Job }{job}, struct{ j *Job }{&job}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
			outputs = append(outputs, fmt.Sprintf(verb, v))
		}
		b, err := json.Marshal(v)
		require.NoError(t, err)
		outputs = append(outputs, string(b))
	}
	var text, js bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&text, nil), slog.NewJSONHandler(&js, nil)} {
		l := slog.New(h)
		l.Info("claimed", "claim", claim, "job", job, "ptr", &job)
	}
	outputs = append(outputs, text.String(), js.String(), claim.String(), claim.GoString(), job.String(), job.GoString())
	for _, out := range outputs {
		for _, secret := range secrets {
			require.NotContains(t, out, secret, "output %q leaks a secret", out)
		}
	}
	require.Contains(t, claim.String(), "job_record_id: 4242")
	require.Contains(t, claim.String(), Redacted)
	require.Contains(t, fmt.Sprintf("%q", claim), `\"etl.orders\"`)
	require.Contains(t, js.String(), `"lease_claim_token":"[REDACTED]"`)
	require.Contains(t, js.String(), `"job_payload":"[REDACTED]"`)
	require.Contains(t, text.String(), "claim.job_record_id=4242")

	// The accessors still give the handler what it needs.
	require.Equal(t, `{"customer_email": "kim@example.com"}`, string(job.Payload()))
	require.Nil(t, Job{}.Payload())
	require.Equal(t, raw, claim.tokenValue().Bytes)
	require.False(t, Claim{}.tokenValue().Valid)
	require.Equal(t, "worker-secret-owner", claim.ownerValue())
}

// The error types say what they wrap and never carry the wrapped text.
func TestErrorTypesWrapAndDescribe(t *testing.T) {
	inner := fmt.Errorf("customer kim@example.com rejected")
	retry := RetryAfter(0, "rate_limited", inner)
	require.ErrorIs(t, retry, inner)
	require.Equal(t, "leasefence: retry job after 0s (reason rate_limited)", retry.Error())
	fail := FailPermanently("bad_record", inner)
	require.ErrorIs(t, fail, inner)
	require.Equal(t, "leasefence: fail job (reason bad_record)", fail.Error())
	he := &handlerError{inner}
	require.Equal(t, inner.Error(), he.Error())
	require.Nil(t, translateError(nil))
	require.Equal(t, inner, translateError(inner), "errors without a SQLSTATE pass unchanged")
}

// The lease heap keeps every lease's index in step with its position.
func TestLeaseHeapIndexes(t *testing.T) {
	var q leaseHeap
	a, b := &Lease{}, &Lease{}
	q.Push(a)
	q.Push(b)
	require.Equal(t, 2, q.Len())
	q.Swap(0, 1)
	require.Equal(t, 0, b.index)
	require.Equal(t, 1, a.index)
	require.Same(t, a, q.Pop())
	require.Equal(t, -1, a.index)
}

// The worker's default retry delay doubles per attempt from 1 s up to 1 h.
func TestDefaultRetryDelayDoublesUpToAnHour(t *testing.T) {
	require.Equal(t, time.Second, defaultRetryDelay(0))
	require.Equal(t, time.Second, defaultRetryDelay(1))
	require.Equal(t, 4*time.Second, defaultRetryDelay(3))
	require.Equal(t, time.Hour, defaultRetryDelay(13))
	require.Equal(t, time.Hour, defaultRetryDelay(1000))
}
