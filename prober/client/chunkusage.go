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
			var ok bool
			st.promptTok, ok, err = d.optInt("prompt_tokens")
			st.promptSet = ok
		case "completion_tokens":
			var ok bool
			st.complTokens, ok, err = d.optInt("completion_tokens")
			st.complSet = ok
		case "prompt_tokens_details":
			err = d.promptDetails(st)
		case "completion_tokens_details":
			err = d.completionDetails(st)
		default:
			err = d.skip(3)
		}
		return err
	})
}

// promptDetails reads usage.prompt_tokens_details: its cached_tokens when
// it is an object (the last of duplicate keys wins), else the value is
// skipped and the cached tokens are not known.
func (d *decoder) promptDetails(st *topState) error {
	st.cachedSet = false
	return d.objectOrSkip(3, func(k []byte) (err error) {
		if string(k) == "cached_tokens" {
			var ok bool
			st.cachedTok, ok, err = d.optInt("cached_tokens")
			st.cachedSet = ok
		} else {
			err = d.skip(4)
		}
		return err
	})
}

// completionDetails reads usage.completion_tokens_details: its
// reasoning_tokens when it is an object (the last of duplicate keys wins),
// else the value is skipped and the reasoning tokens are not known.
func (d *decoder) completionDetails(st *topState) error {
	st.reasonTokSet = false
	return d.objectOrSkip(3, func(k []byte) (err error) {
		if string(k) == "reasoning_tokens" {
			var ok bool
			st.reasonTok, ok, err = d.optInt("reasoning_tokens")
			st.reasonTokSet = ok
		} else {
			err = d.skip(4)
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
