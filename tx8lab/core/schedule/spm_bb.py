"""The branch-and-bound kernel of :mod:`tx8lab.core.schedule.spm_alloc`'s ``best`` allocator.

Plain Python over int64 numpy arrays with an explicit DFS stack, so that numba can compile
it (``spm_alloc._kernel`` does, with its disk cache); the search itself, its bounds and
the readings chosen are described in ``spm_alloc``'s module docstring. Kept apart from the
driver only for size: nothing here is public.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]

# Search-frame fields of the explicit DFS stack (one int64 row per frame).
_KIND, _STATE, _PB, _M, _IN, _IN_LEN, _KEYS, _NKEYS = 0, 1, 2, 3, 4, 5, 6, 7
_S_LO, _S_HI, _MIN_OFF, _MIN_PRE, _NEXT, _MIN_H, _PLACED = 8, 9, 10, 11, 12, 13, 14
_MO_MARK, _SF_MARK, _ATOP, _HATLESS = 15, 16, 17, 18
_NFIELDS = 19
_SEARCH, _SPLIT = 0, 1
_FOUND, _INFEASIBLE, _ABORTED = 0, 1, 2
_INF = 1 << 62
#: Tries in a row that may run out of nodes before a descent pass gives up (and the
#: next pass starts again from the best peak with twice the node budget).
_MAX_STALLS = 6
#: Static preorders (MiniMalloc's WAT, TAW, TWA): 0 width, 1 area, 2 section total.
_HEURISTICS = ((0, 1, 2), (2, 1, 0), (2, 0, 1))


def _bb_solve(
    cap: int,
    lower: IntArray,
    upper: IntArray,
    size: IntArray,
    align: IntArray,
    ov_ptr: IntArray,
    ov_idx: IntArray,
    bs_lo: IntArray,
    bs_hi: IntArray,
    sec_ptr: IntArray,
    sec_buf: IntArray,
    total0: IntArray,
    cuts0: IntArray,
    part_cps: IntArray,
    heur: IntArray,
    node_limit: int,
    sol: IntArray,
) -> tuple[int, int]:
    """Depth-first search for offsets of every buffer with ``offset + size <= cap``.

    Buffers ``b`` are live in sections ``[bs_lo[b], bs_hi[b])`` (a section is the set of
    buffers live just before one of the distinct end times); ``ov_*`` lists the buffers
    each one overlaps in time, ``sec_*`` the members of each section. Writes ``sol`` and
    returns ``(status, nodes)``: found, infeasible (the whole tree was searched) or aborted
    (``node_limit`` nodes visited).
    """
    n = len(size)
    n_sec = len(total0)
    off = np.full(n, -1, np.int64)
    minoff = np.zeros(n, np.int64)
    floor = np.zeros(n_sec, np.int64)
    total = total0.copy()
    cuts = cuts0.copy()
    mo_b = np.empty(len(ov_idx) + 1, np.int64)
    mo_v = np.empty(len(ov_idx) + 1, np.int64)
    span = 0
    for b in range(n):
        span += bs_hi[b] - bs_lo[b]
    # Floor undo stack: grown on demand (a placement records at most its own sections
    # plus every section of the sub-problem).
    sf_s = np.empty(span + 4 * n_sec + 64, np.int64)
    sf_v = np.empty(span + 4 * n_sec + 64, np.int64)
    cov = np.zeros(n_sec + 1, np.int64)
    frames = np.zeros((2 * n + 4, _NFIELDS), np.int64)
    arena = np.empty(4 * n + len(part_cps) + 64, np.int64)
    nodes = node_limit
    mo_top = 0
    sf_top = 0
    # The root is a split frame over every buffer, cut at the independent partitions.
    for b in range(n):
        arena[b] = b
    for q in range(len(part_cps)):
        arena[n + q] = part_cps[q]
    frames[0, _KIND] = _SPLIT
    frames[0, _PB] = 0
    frames[0, _M] = n
    frames[0, _IN] = n
    frames[0, _IN_LEN] = len(part_cps)
    frames[0, _NEXT] = 1
    atop = n + len(part_cps)
    sp = 1
    ret = _FOUND
    while sp > 0:
        f = sp - 1
        if frames[f, _KIND] == _SPLIT:
            # Solve the sub-problems between cut points one after the other; all must fit.
            if frames[f, _STATE] == 1 and ret != _FOUND:
                atop = frames[f, _ATOP]
                sp -= 1
                continue
            frames[f, _STATE] = 1
            pb = frames[f, _PB]
            m_all = frames[f, _M]
            cps = frames[f, _IN]
            pushed = False
            while frames[f, _NEXT] < frames[f, _IN_LEN]:
                ci = frames[f, _NEXT]
                frames[f, _NEXT] = ci + 1
                c0 = arena[cps + ci - 1]
                c1 = arena[cps + ci]
                if atop + 3 * m_all + 8 > len(arena):
                    bigger = np.empty(2 * len(arena) + atop + 3 * m_all + 8, np.int64)
                    bigger[: len(arena)] = arena
                    arena = bigger
                cnt = 0
                for k in range(m_all):
                    j = arena[pb + k]
                    if off[j] < 0 and bs_lo[j] < c1 and c0 < bs_hi[j]:
                        arena[atop + cnt] = j
                        cnt += 1
                if cnt == 0:
                    continue
                # Static preorder: stable sorts by the heuristic's keys, last key first.
                sub = np.sort(arena[atop : atop + cnt])
                keys = np.empty((3, cnt), np.int64)
                for k in range(cnt):
                    b = sub[k]
                    keys[0, k] = upper[b] - lower[b]
                    keys[1, k] = keys[0, k] * size[b]
                    mx = 0
                    for s in range(bs_lo[b], bs_hi[b]):
                        mx = max(mx, total[s])
                    keys[2, k] = mx
                perm = np.arange(cnt)
                for h in range(len(heur) - 1, -1, -1):
                    neg = np.empty(cnt, np.int64)
                    for k in range(cnt):
                        neg[k] = -keys[heur[h], perm[k]]
                    perm = perm[np.argsort(neg, kind="mergesort")]
                g = sp
                frames[g, _ATOP] = atop
                frames[g, _KIND] = _SEARCH
                frames[g, _STATE] = 0
                frames[g, _PB] = atop
                frames[g, _M] = cnt
                for k in range(cnt):
                    arena[atop + k] = sub[perm[k]]
                    arena[atop + cnt + k] = k
                frames[g, _IN] = atop + cnt
                frames[g, _IN_LEN] = cnt
                atop += 2 * cnt
                frames[g, _S_LO] = c0
                frames[g, _S_HI] = c1
                frames[g, _MIN_OFF] = 0
                frames[g, _MIN_PRE] = 0
                frames[g, _PLACED] = -1
                sp += 1
                pushed = True
                break
            if not pushed:
                ret = _FOUND
                atop = frames[f, _ATOP]
                sp -= 1
            continue
        m_all = frames[f, _M]
        pb = frames[f, _PB]
        if frames[f, _STATE] == 0:
            # A new node: order the unplaced buffers by (lowest offset, preorder).
            frames[f, _STATE] = 1
            if nodes <= 0:
                ret = _ABORTED
                atop = frames[f, _ATOP]
                sp -= 1
                continue
            nodes -= 1
            if atop + m_all + 8 > len(arena):
                bigger = np.empty(2 * len(arena) + atop + m_all + 8, np.int64)
                bigger[: len(arena)] = arena
                arena = bigger
            key_at = atop
            m = 0
            min_h = _INF
            src = frames[f, _IN]
            for k in range(frames[f, _IN_LEN]):
                p = arena[src + k] % m_all
                b = arena[pb + p]
                if off[b] < 0:
                    arena[key_at + m] = minoff[b] * m_all + p
                    m += 1
                    min_h = min(min_h, minoff[b] + size[b])
            if m == 0:
                for k in range(m_all):
                    sol[arena[pb + k]] = off[arena[pb + k]]
                ret = _FOUND
                atop = frames[f, _ATOP]
                sp -= 1
                continue
            arena[key_at : key_at + m].sort()
            atop += m
            frames[f, _KEYS] = key_at
            frames[f, _NKEYS] = m
            frames[f, _NEXT] = 0
            frames[f, _MIN_H] = min_h
        else:
            # Back from a child: undo its placement.
            b = frames[f, _PLACED]
            if b >= 0:
                for s in range(bs_lo[b], bs_hi[b] - 1):
                    cuts[s] += 1
                mark = frames[f, _SF_MARK]
                while sf_top > mark:
                    sf_top -= 1
                    floor[sf_s[sf_top]] = sf_v[sf_top]
                for s in range(bs_lo[b], bs_hi[b]):
                    total[s] += size[b]
                mark = frames[f, _MO_MARK]
                while mo_top > mark:
                    mo_top -= 1
                    minoff[mo_b[mo_top]] = mo_v[mo_top]
                off[b] = -1
                frames[f, _PLACED] = -1
                # A fit or an abort ends this node; so does a failed hatless buffer.
                if ret != _INFEASIBLE or frames[f, _HATLESS] == 1:
                    atop = frames[f, _ATOP]
                    sp -= 1
                    continue
        key_at = frames[f, _KEYS]
        m = frames[f, _NKEYS]
        min_h = frames[f, _MIN_H]
        min_off = frames[f, _MIN_OFF]
        min_pre = frames[f, _MIN_PRE]
        s_lo = frames[f, _S_LO]
        s_hi = frames[f, _S_HI]
        pushed = False
        k = frames[f, _NEXT]
        while k < m:
            key = arena[key_at + k]
            k += 1
            o = key // m_all
            p = key - o * m_all
            # Canonical order: placements never go back below (offset, preorder).
            if o < min_off or (o == min_off and p < min_pre):
                continue
            # Dominance: a gap below the lowest reachable height would stay empty.
            if o >= min_h:
                k = m
                break
            b = arena[pb + p]
            need = sf_top + bs_hi[b] - bs_lo[b] + s_hi - s_lo + 1
            if need > len(sf_s):
                grown_s = np.empty(2 * len(sf_s) + need, np.int64)
                grown_v = np.empty(2 * len(sf_s) + need, np.int64)
                grown_s[:sf_top] = sf_s[:sf_top]
                grown_v[:sf_top] = sf_v[:sf_top]
                sf_s = grown_s
                sf_v = grown_v
            off[b] = o
            h = o + size[b]
            mo_mark = mo_top
            sf_mark = sf_top
            hatless = 1
            for e in range(ov_ptr[b], ov_ptr[b + 1]):
                j = ov_idx[e]
                if off[j] < 0:
                    hatless = 0
                    if minoff[j] < h:
                        mo_b[mo_top] = j
                        mo_v[mo_top] = minoff[j]
                        mo_top += 1
                        v = h
                        r = v % align[j]
                        if r:
                            v += align[j] - r
                        minoff[j] = v
            for s in range(bs_lo[b], bs_hi[b]):
                sf_s[sf_top] = s
                sf_v[sf_top] = floor[s]
                sf_top += 1
                floor[s] = h
                total[s] -= size[b]
            # Section inference: max(offset, floor) + unplaced bytes must fit.
            ok = True
            for s in range(s_lo, s_hi):
                if max(floor[s], o) + total[s] > cap:
                    ok = False
                    break
            if ok and mo_top > mo_mark:
                # Raise the floor of sections whose members moved up to their lowest
                # reachable offset, then check those sections again.
                for s in range(s_lo, s_hi + 1):
                    cov[s] = 0
                for t in range(mo_mark, mo_top):
                    cov[bs_lo[mo_b[t]]] += 1
                    cov[bs_hi[mo_b[t]]] -= 1
                c = 0
                for s in range(s_lo, s_hi):
                    c += cov[s]
                    if c == 0:
                        continue
                    lowest = _INF
                    for e in range(sec_ptr[s], sec_ptr[s + 1]):
                        j = sec_buf[e]
                        if off[j] < 0 and minoff[j] < lowest:
                            lowest = minoff[j]
                    if lowest != _INF and floor[s] < lowest:
                        sf_s[sf_top] = s
                        sf_v[sf_top] = floor[s]
                        sf_top += 1
                        floor[s] = lowest
                        if lowest + total[s] > cap:
                            ok = False
                            break
            if ok:
                sol[b] = o
                ncut = 0
                for s in range(bs_lo[b], bs_hi[b] - 1):
                    cuts[s] -= 1
                    if cuts[s] == 0:
                        ncut += 1
                frames[f, _PLACED] = b
                frames[f, _MO_MARK] = mo_mark
                frames[f, _SF_MARK] = sf_mark
                frames[f, _HATLESS] = hatless
                g = sp
                frames[g, _ATOP] = atop
                frames[g, _STATE] = 0
                frames[g, _PB] = pb
                frames[g, _M] = m_all
                if ncut == 0:
                    frames[g, _KIND] = _SEARCH
                    frames[g, _IN] = key_at
                    frames[g, _IN_LEN] = m
                    frames[g, _S_LO] = s_lo
                    frames[g, _S_HI] = s_hi
                    frames[g, _MIN_OFF] = o
                    frames[g, _MIN_PRE] = p
                    frames[g, _PLACED] = -1
                else:
                    # No unplaced buffer crosses these boundaries any more: split.
                    if atop + ncut + 2 > len(arena):
                        bigger = np.empty(2 * len(arena) + atop + ncut + 2, np.int64)
                        bigger[: len(arena)] = arena
                        arena = bigger
                    frames[g, _KIND] = _SPLIT
                    frames[g, _IN] = atop
                    arena[atop] = s_lo
                    c = 1
                    for s in range(bs_lo[b], bs_hi[b] - 1):
                        if cuts[s] == 0:
                            arena[atop + c] = s + 1
                            c += 1
                    arena[atop + c] = s_hi
                    frames[g, _IN_LEN] = c + 1
                    frames[g, _NEXT] = 1
                    atop += c + 1
                sp += 1
                pushed = True
                break
            while sf_top > sf_mark:
                sf_top -= 1
                floor[sf_s[sf_top]] = sf_v[sf_top]
            for s in range(bs_lo[b], bs_hi[b]):
                total[s] += size[b]
            while mo_top > mo_mark:
                mo_top -= 1
                minoff[mo_b[mo_top]] = mo_v[mo_top]
            off[b] = -1
            # Hatless: nothing unplaced overlaps b, so no other choice here can help.
            if hatless:
                k = m
                break
        frames[f, _NEXT] = k
        if not pushed:
            ret = _INFEASIBLE
            atop = frames[f, _ATOP]
            sp -= 1
    return ret, node_limit - nodes
