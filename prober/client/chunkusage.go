package client

import (
	"math"
	"strconv"
)

// The final chunk's figures (chunk.go's decoder): usage with its prompt
// and completion details, llama.cpp's timings and vLLM's per-request
// metrics.

// usageObject reports whether a usage object follows (false for null);
// anything else is an error.
func (d *decoder) usageObject() (bool, error) {
	if d.null() {
		return false, nil
	}
	if d.peek() != '{' {
		return false, d.fail("usage is not an object")
	}
	return true, nil
}

func (d *decoder) usage(c *chunk, st *topState) error {
	c.hasUsage = false
	st.promptSet, st.complSet, st.cachedSet, st.reasonTokSet = false, false, false, false
	if ok, err := d.usageObject(); !ok {
		return err
	}
	c.hasUsage = true
	return d.members(func(k []byte) (err error) {
		switch string(k) {
		case "prompt_tokens":
			st.promptTok, st.promptSet, err = d.optInt("prompt_tokens")
		case "completion_tokens":
			st.complTokens, st.complSet, err = d.optInt("completion_tokens")
		case "prompt_tokens_details":
			st.cachedSet = false
			err = d.detailInt(3, "cached_tokens", &st.cachedTok, &st.cachedSet)
		case "completion_tokens_details":
			st.reasonTokSet = false
			err = d.detailInt(3, "reasoning_tokens", &st.reasonTok, &st.reasonTokSet)
		default:
			err = d.skip(3)
		}
		return err
	})
}

// detailInt reads a usage details object at depth (chat's
// usage.prompt_tokens_details at 3, the Responses API's
// response.usage.input_tokens_details at 4) and its integer member key (an
// integer or null; anything else is an error; the last of duplicate keys
// wins); a value that is not an object is skipped and the figure is not
// known.
func (d *decoder) detailInt(depth int, key string, v *int, ok *bool) error {
	return d.objectOrSkip(depth, func(k []byte) (err error) {
		if string(k) == key {
			*v, *ok, err = d.optInt(key)
		} else {
			err = d.skip(depth + 1)
		}
		return err
	})
}

// timings reads llama-server's timings: its draft_n and draft_n_accepted
// when it is an object (the last of duplicate keys wins), else the value is
// skipped and neither is known.
func (d *decoder) timings(st *topState) error {
	st.draftSet, st.draftAccSet = false, false
	return d.objectOrSkip(2, func(k []byte) (err error) {
		switch string(k) {
		case "draft_n":
			st.draftTok, st.draftSet, err = d.countOrSkip()
		case "draft_n_accepted":
			st.draftAcc, st.draftAccSet, err = d.countOrSkip()
		default:
			err = d.skip(3)
		}
		return err
	})
}

// serverMetrics reads vLLM's per-request metrics object: its
// queue_time_ms, time_to_first_token_ms and generation_time_ms when it is
// an object (the last of duplicate keys wins), else the value is skipped
// and none is known.
func (d *decoder) serverMetrics(st *topState) error {
	st.srvQueueSet, st.srvTTFTSet, st.srvGenSet = false, false, false
	return d.objectOrSkip(2, func(k []byte) (err error) {
		switch string(k) {
		case "queue_time_ms":
			st.srvQueue, st.srvQueueSet, err = d.millisOrSkip()
		case "time_to_first_token_ms":
			st.srvTTFT, st.srvTTFTSet, err = d.millisOrSkip()
		case "generation_time_ms":
			st.srvGen, st.srvGenSet, err = d.millisOrSkip()
		default:
			err = d.skip(3)
		}
		return err
	})
}

// millisOrSkip reads any value and reports it when it is a finite
// non-negative number; any other value (a string, a negative number, one
// out of float64's range, null, an array or object) is validated and
// skipped.
func (d *decoder) millisOrSkip() (float64, bool, error) {
	if p := d.peek(); p != '-' && (p < '0' || p > '9') {
		return 0, false, d.skip(3)
	}
	start := d.i
	if err := d.number(); err != nil {
		return 0, false, err
	}
	v, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, false, nil
	}
	return v, true, nil
}

// countOrSkip reads any value and reports it when it is a non-negative
// integer; any other value (a string, a fraction, an exponent, a negative
// number, an overflow, null, an array or object) is validated and skipped.
func (d *decoder) countOrSkip() (int, bool, error) {
	if p := d.peek(); p != '-' && (p < '0' || p > '9') {
		return 0, false, d.skip(3)
	}
	start := d.i
	if err := d.number(); err != nil {
		return 0, false, err
	}
	n, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 0)
	if err != nil || n < 0 {
		return 0, false, nil
	}
	return int(n), true, nil
}
