package goclient

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// typedOrder is the payload type of the decoding tests.
type typedOrder struct {
	OrderID int64 `json:"order_id"`
	Lines   []struct {
		Quantity uint8 `json:"quantity"`
	} `json:"lines"`
}

// jobWithPayload is a Job whose payload is p (no claim behind it).
func jobWithPayload(p string) Job {
	return Job{payload: func() []byte { return []byte(p) }}
}

// TestJSONHandlersDecodeOrFailWithABoundedReason: a payload that decodes
// reaches the handler as the Go value; one that does not never reaches
// it and ends as FailPermanently(payload_decode_failed) with a *PayloadDecodeError
// that names the type, field, kind and offset but no value from the payload.
func TestJSONHandlersDecodeOrFailWithABoundedReason(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var got typedOrder
	handler := JSONHandler(func(_ context.Context, _ Job, o typedOrder) error { got = o; return nil })
	txHandler := JSONTxHandler(func(_ context.Context, _ pgx.Tx, _ Job, o typedOrder) error { got = o; return nil })

	require.NoError(t, handler(ctx, jobWithPayload(`{"order_id": 7, "lines": [{"quantity": 2}]}`)))
	require.Equal(t, int64(7), got.OrderID)
	require.Equal(t, uint8(2), got.Lines[0].Quantity)
	got = typedOrder{}
	require.NoError(t, txHandler(ctx, nil, jobWithPayload(`{"order_id": 8, "lines": []}`)))
	require.Equal(t, int64(8), got.OrderID)

	for _, tc := range []struct {
		payload, message, secret string
		decoderQuotesIt          bool
		underlying               any
	}{
		{`{"order_id": "secret-order-ref"}`,
			"leasefence: payload does not decode into goclient.typedOrder: field order_id: found a JSON string (at byte 31)",
			"secret-order-ref", false, new(*json.UnmarshalTypeError)},
		{`{"order_id": 1, "lines": [{"quantity": 98765}]}`, // out of range: the decoder's text quotes the number
			"leasefence: payload does not decode into goclient.typedOrder: field lines.quantity: found a JSON number (at byte 44)",
			"98765", true, new(*json.UnmarshalTypeError)},
		{`{"order_id": 1, "lines": [}`, // never from the database (jsonb is valid JSON), but decoded all the same
			"leasefence: payload does not decode into goclient.typedOrder (at byte 27)", "", false, new(*json.SyntaxError)},
		{``, "leasefence: payload does not decode into goclient.typedOrder (at byte 0)", "", false, nil},
	} {
		got = typedOrder{}
		for _, run := range []func() error{
			func() error { return handler(ctx, jobWithPayload(tc.payload)) },
			func() error { return txHandler(ctx, nil, jobWithPayload(tc.payload)) },
		} {
			err := run()
			var permanent *PermanentError
			require.ErrorAs(t, err, &permanent)
			require.Equal(t, ReasonPayloadDecodeFailed, permanent.ReasonCode)
			var decodeErr *PayloadDecodeError
			require.ErrorAs(t, err, &decodeErr)
			require.Equal(t, tc.message, decodeErr.Error())
			require.Equal(t, tc.message, handlerErrorText(err), "the worker logs the decode error")
			if tc.secret != "" {
				require.NotContains(t, decodeErr.Error(), tc.secret)
				if tc.decoderQuotesIt {
					require.Contains(t, errors.Unwrap(decodeErr).Error(), tc.secret, "the decoder's own text would have leaked it")
				}
			}
			if tc.underlying != nil {
				require.ErrorAs(t, err, tc.underlying)
			}
			require.Equal(t, typedOrder{}, got, "the handler is not called")
		}
	}
	require.Equal(t, "leasefence: fail job (reason x)", handlerErrorText(FailPermanently("x", nil)))
	require.Equal(t, "leasefence: retry job after 1s (reason x)", handlerErrorText(RetryAfter(1e9, "x", nil)))
}
