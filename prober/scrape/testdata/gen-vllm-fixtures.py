#!/usr/bin/env python3
# Regenerates the vLLM-shaped /metrics fixtures in this directory:
#   python3 gen-vllm-fixtures.py .
# Output mimics prometheus_client text format 0.0.4 as vLLM V1 serves it
# (vllm: names, model_name/engine labels, _created gauges, vLLM buckets).
# The observation lists below are what scrape_test.go hand-computes from.
import sys
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
TTFT_B = [0.001,0.005,0.01,0.02,0.04,0.06,0.08,0.1,0.25,0.5,0.75,1.0,2.5,5.0,7.5,10.0,20.0,40.0,80.0,160.0,640.0,2560.0]
ITL_B = [0.01,0.025,0.05,0.075,0.1,0.15,0.2,0.3,0.4,0.5,0.75,1.0,2.5,5.0,7.5,10.0,20.0,40.0,80.0]
REQ_B = [0.3,0.5,0.8,1.0,1.5,2.0,2.5,5.0,10.0,15.0,20.0,30.0,40.0,50.0,60.0,120.0,240.0,480.0,960.0,1920.0,7680.0]

def f(v):
    # prometheus_client's floatToGoString
    d = float(v)
    if d == float('inf'): return '+Inf'
    s = repr(d)
    dot = s.find('.')
    if d > 0 and dot > 6:
        mantissa = f'{s[0]}.{s[1:dot]}{s[dot + 1:]}'.rstrip('0.')
        return f'{mantissa}e+0{dot - 1}'
    return s

def lbl(d):
    return '{' + ','.join(f'{k}="{v}"' for k, v in d.items()) + '}'

out = []
def gauge(name, help, series):
    out.append(f"# HELP {name} {help}\n# TYPE {name} gauge\n")
    for labels, v in series:
        out.append(f"{name}{lbl(labels)} {f(v)}\n")

def counter(name, help, series, created):
    out.append(f"# HELP {name}_total {help}\n# TYPE {name}_total counter\n")
    for labels, v in series:
        out.append(f"{name}_total{lbl(labels)} {f(v)}\n")
    out.append(f"# HELP {name}_created {help}\n# TYPE {name}_created gauge\n")
    for labels, v in series:
        out.append(f"{name}_created{lbl(labels)} {f(created)}\n")

def hist(name, help, bounds, series, created):
    out.append(f"# HELP {name} {help}\n# TYPE {name} histogram\n")
    for labels, obs in series:
        for b in bounds + [float('inf')]:
            n = sum(1 for o in obs if o <= b)
            l = dict(labels); l['le'] = f(b)
            out.append(f"{name}_bucket{lbl(l)} {f(n)}\n")
        out.append(f"{name}_count{lbl(labels)} {f(len(obs))}\n")
        out.append(f"{name}_sum{lbl(labels)} {f(sum(obs))}\n")
    out.append(f"# HELP {name}_created {help}\n# TYPE {name}_created gauge\n")
    for labels, obs in series:
        out.append(f"{name}_created{lbl(labels)} {f(created)}\n")

def snapshot(running, waiting, kv, prompt, gen, stop, length, preempt, pq, ph, ttft, itl, tpot, e2e, http2xx, created, engines=("0",)):
    out.clear()
    out.append('# HELP python_gc_objects_collected_total Objects collected during gc\n# TYPE python_gc_objects_collected_total counter\n')
    out.append('python_gc_objects_collected_total{generation="0"} 12345.0\npython_gc_objects_collected_total{generation="1"} 2345.0\n')
    out.append('# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes 2.147483648e+09\n')
    out.append('# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\n')
    out.append(f'process_start_time_seconds {f(created - 30.0)}\n')
    counter('http_requests', 'Total number of requests by method, status and handler.',
            [({'handler': '/v1/completions', 'method': 'POST', 'status': '2xx'}, http2xx),
             ({'handler': '/metrics', 'method': 'GET', 'status': '2xx'}, 42.0)], created)
    E = [{'model_name': MODEL, 'engine': e} for e in engines]
    def per(vals):  # vals is a list per engine
        return list(zip(E, vals))
    gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', per(running))
    gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', per(waiting))
    gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', per(kv))
    out.append('# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n')
    for e in engines:
        out.append('vllm:cache_config_info{block_size="16",cache_dtype="auto",calculate_kv_scales="False",enable_prefix_caching="True",engine="%s",gpu_memory_utilization="0.9",num_gpu_blocks="27724",num_gpu_blocks_override="None",prefix_caching_hash_algo="sha256",swap_space="4"} 1.0\n' % e)
    counter('vllm:num_preemptions', 'Cumulative number of preemption from the engine.', per(preempt), created)
    counter('vllm:prompt_tokens', 'Number of prefill tokens processed.', per(prompt), created)
    counter('vllm:generation_tokens', 'Number of generation tokens processed.', per(gen), created)
    rs = []
    for i, e in enumerate(E):
        for reason, v in (('stop', stop[i]), ('length', length[i]), ('abort', 0.0), ('error', 0.0)):
            l = dict(e); l['finished_reason'] = reason
            rs.append((l, v))
    counter('vllm:request_success', 'Count of successfully processed requests.', rs, created)
    counter('vllm:prefix_cache_queries', 'Prefix cache queries, in terms of number of queried tokens.', per(pq), created)
    counter('vllm:prefix_cache_hits', 'Prefix cache hits, in terms of number of cached tokens.', per(ph), created)
    hist('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_B, per(ttft), created)
    hist('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', ITL_B, per(itl), created)
    hist('vllm:request_time_per_output_token_seconds', 'Histogram of time_per_output_token_seconds per request.', ITL_B, per(tpot), created)
    hist('vllm:e2e_request_latency_seconds', 'Histogram of e2e request latency in seconds.', REQ_B, per(e2e), created)
    return ''.join(out)

C0 = 1752300000.123
# Before: 200 finished requests.
ttft0 = [0.015]*50 + [0.03]*100 + [0.05]*50
itl0 = [0.012]*3000
tpot0 = [0.012]*200
e2e0 = [0.4]*150 + [0.9]*50
# Step: 20 requests (the test computes quantiles from these counts by hand).
ttft1 = [0.03]*2 + [0.05]*8 + [0.07]*6 + [0.09]*3 + [0.3]
itl1 = [0.02]*300 + [0.06]*20
tpot1 = [0.021]*18 + [0.04]*2
e2e1 = [0.45]*10 + [0.7]*6 + [1.2]*4

def w(path, s):
    open(path, 'w').write(s)

d = sys.argv[1]
w(f'{d}/vllm-before.prom', snapshot([0.0],[0.0],[0.0],[12800.0],[3200.0],[150.0],[50.0],[0.0],[12800.0],[6400.0],[ttft0],[itl0],[tpot0],[e2e0],200.0,C0))
w(f'{d}/vllm-during.prom', snapshot([8.0],[3.0],[0.42],[13440.0],[3400.0],[155.0],[55.0],[1.0],[13440.0],[6700.0],[ttft0+ttft1[:10]],[itl0+itl1[:100]],[tpot0+tpot1[:10]],[e2e0+e2e1[:10]],210.0,C0))
w(f'{d}/vllm-after.prom', snapshot([0.0],[0.0],[0.01],[14080.0],[3520.0],[165.0],[55.0],[2.0],[14080.0],[7040.0],[ttft0+ttft1],[itl0+itl1],[tpot0+tpot1],[e2e0+e2e1],220.0,C0))
# Restarted: server came back (new _created), counters small again except http
# (higher than before although reset: only _created reveals it).
C1 = C0 + 3600.0
w(f'{d}/vllm-restarted.prom', snapshot([0.0],[0.0],[0.0],[640.0],[160.0],[5.0],[0.0],[0.0],[640.0],[0.0],[ttft1[:5]],[itl1[:50]],[tpot1[:5]],[e2e1[:5]],250.0,C1))
# Two engines (data parallel), busy.
w(f'{d}/vllm-dp2.prom', snapshot([4.0,5.0],[0.0,2.0],[0.30,0.55],[100.0,200.0],[10.0,20.0],[1.0,2.0],[0.0,0.0],[0.0,0.0],[100.0,200.0],[0.0,50.0],[ttft1[:5],ttft1[5:]],[itl1[:5],itl1[5:10]],[tpot1[:5],tpot1[5:]],[e2e1[:5],e2e1[5:]],3.0,C0,engines=("0","1")))
