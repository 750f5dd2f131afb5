package simulator

// kvBlock is one KV cache block of blockSize tokens.
type kvBlock struct {
	ref        int    // sequences holding the block
	hash       uint64 // chain hash of the prompt prefix it holds, when hashed
	hashed     bool
	prev, next *kvBlock // free list links, valid while ref == 0
}

// kvCache models vLLM V1's block pool: a fixed number of blocks, a free list
// in eviction order (least recently freed first) and, with prefix caching, a
// map from the chain hash of a full prompt block to a block holding it. A
// freed block keeps its hash and can still be hit until it is evicted by a
// new allocation. Owned by the engine goroutine.
type kvCache struct {
	blockSize int
	prefix    bool
	blocks    []kvBlock
	freeList  kvBlock // sentinel of the circular free list
	numFree   int
	cached    map[uint64]*kvBlock
}

func newKVCache(numBlocks, blockSize int, prefix bool) *kvCache {
	k := &kvCache{blockSize: blockSize, prefix: prefix, blocks: make([]kvBlock, numBlocks), cached: map[uint64]*kvBlock{}}
	k.freeList.prev, k.freeList.next = &k.freeList, &k.freeList
	for i := range k.blocks {
		k.pushFree(&k.blocks[i])
	}
	return k
}

func (k *kvCache) pushFree(b *kvBlock) {
	b.prev, b.next = k.freeList.prev, &k.freeList
	k.freeList.prev.next = b
	k.freeList.prev = b
	k.numFree++
}

func (k *kvCache) removeFree(b *kvBlock) {
	b.prev.next, b.next.prev = b.next, b.prev
	b.prev, b.next = nil, nil
	k.numFree--
}

// popFree takes the least recently freed block, evicting its cached hash.
func (k *kvCache) popFree() *kvBlock {
	b := k.freeList.next
	k.removeFree(b)
	if b.hashed {
		if k.cached[b.hash] == b {
			delete(k.cached, b.hash)
		}
		b.hashed = false
	}
	b.ref = 1
	return b
}

// usage is vLLM's kv_cache_usage_perc: 1 - free blocks / all blocks (cached
// but unreferenced blocks count as free).
func (k *kvCache) usage() float64 {
	return 1 - float64(k.numFree)/float64(len(k.blocks))
}

// lookup returns the cached blocks of s's longest cached prompt prefix,
// leaving at least one token to compute (vLLM recomputes the last token of a
// fully cached prompt).
func (k *kvCache) lookup(s *sequence) []*kvBlock {
	if !k.prefix {
		return nil
	}
	limit := min(len(s.hashes), (s.numTokens()-1)/k.blockSize)
	var hits []*kvBlock
	for _, h := range s.hashes[:limit] {
		b, ok := k.cached[h]
		if !ok {
			break
		}
		hits = append(hits, b)
	}
	return hits
}

// admit gives a waiting sequence the hit blocks plus new blocks for tokens
// tokens; it changes nothing and returns false when the pool is too small.
func (k *kvCache) admit(s *sequence, hits []*kvBlock, tokens int) bool {
	need := ceilDiv(tokens, k.blockSize) - len(hits)
	hitsFree := 0
	for _, b := range hits {
		if b.ref == 0 {
			hitsFree++
		}
	}
	if need > k.numFree-hitsFree {
		return false
	}
	s.blocks = s.blocks[:0]
	for _, b := range hits {
		if b.ref == 0 {
			k.removeFree(b)
		}
		b.ref++
		s.blocks = append(s.blocks, b)
	}
	for range need {
		s.blocks = append(s.blocks, k.popFree())
	}
	return true
}

// grow makes s hold blocks for tokens tokens; it returns false, changing
// nothing, when the pool is too small.
func (k *kvCache) grow(s *sequence, tokens int) bool {
	need := ceilDiv(tokens, k.blockSize) - len(s.blocks)
	if need <= 0 {
		return true
	}
	if need > k.numFree {
		return false
	}
	for range need {
		s.blocks = append(s.blocks, k.popFree())
	}
	return true
}

// free releases s's blocks, tail blocks first so they are evicted first.
func (k *kvCache) free(s *sequence) {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		b := s.blocks[i]
		b.ref--
		if b.ref == 0 {
			k.pushFree(b)
		}
		s.blocks[i] = nil
	}
	s.blocks = s.blocks[:0]
}

// register offers s's newly computed full prompt blocks to the prefix cache.
func (k *kvCache) register(s *sequence) {
	if !k.prefix {
		return
	}
	full := min(len(s.hashes), min(s.numComputed, len(s.prompt))/k.blockSize, len(s.blocks))
	for j := s.registered; j < full; j++ {
		b, h := s.blocks[j], s.hashes[j]
		if b.hashed {
			continue
		}
		if _, ok := k.cached[h]; !ok {
			b.hash, b.hashed = h, true
			k.cached[h] = b
		}
	}
	s.registered = max(s.registered, full)
}

// promptBlockHashes returns the chain hashes of the full blocks of prompt,
// the chain starting from seed (0, or a replica's: replicaSeed).
func promptBlockHashes(prompt []int, blockSize int, seed uint64) []uint64 {
	n := len(prompt) / blockSize
	hashes := make([]uint64, n)
	h := seed
	for j := range n {
		h = hashTokens(h, prompt[j*blockSize:(j+1)*blockSize])
		hashes[j] = h
	}
	return hashes
}
