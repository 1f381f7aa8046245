#!/usr/bin/env python3
"""A lane-by-lane model of kernels/cores/conv_transpose_gather/tensor_rows.cuh's index maps:
plan_tensor_rows, the prepared A fragments, the staged x (iw_base, lead, x_pitch), each warp
item's B windows and m16n8k8 fragments (PTX's tf32 layouts: a0..a3, b0/b1, c0..c3), the staged
output rows (z_stride, 16-byte phases, aliasing) and store_pass. Products exact in float64, so
any index error shows as a difference from a direct transposed conv; shared memory and y start
as NaN, so a read of an unstaged word or an unwritten output shows too. Run by hand (numpy; a
few minutes) when the kernel's indexing changes: it needs no GPU.

usage: tools/emulate_tensor_rows.py [KW SW DW]   (column taps; default L1_075's 5 3 1)
"""
import itertools
import sys

import numpy as np

KW, SW, DW = [int(v) for v in sys.argv[1:4]] if len(sys.argv) > 3 else (5, 3, 1)
def phase(t): return t*DW % SW
def offset(t): return t*DW // SW
KOFF = (KW-1)*DW//SW
TILES, ITEMQ, WARPS = 4, 32, 8

def reference(x, w, groups, s, pad, dil, outpad):
    N, C_in, H, W = x.shape; cin_g = C_in//groups; cout_g = w.shape[1]; KH, KWW = w.shape[2:]
    Ho = (H-1)*s[0]-2*pad[0]+dil[0]*(KH-1)+outpad[0]+1; Wo = (W-1)*s[1]-2*pad[1]+dil[1]*(KWW-1)+outpad[1]+1
    y = np.zeros((N, groups*cout_g, Ho, Wo))
    for n,c,ih,iw in itertools.product(range(N),range(C_in),range(H),range(W)):
        gi = c//cin_g
        for th in range(KH):
            oh = ih*s[0]-pad[0]+th*dil[0]
            if not 0<=oh<Ho: continue
            for t in range(KWW):
                ow = iw*s[1]-pad[1]+t*dil[1]
                if 0<=ow<Wo: y[n, gi*cout_g:(gi+1)*cout_g, oh, ow] += x[n,c,ih,iw]*w[c,:,th,t]
    return y

def rup(a, res): return a + ((res - a) % 32 + 32) % 32

def emulate(x, w, groups, s, pad, dil, outpad, y_shape):
    N, C_in, H, W = x.shape; cin_g = C_in//groups; cout_g = w.shape[1]; KH = w.shape[2]
    Ho, Wo = y_shape[2], y_shape[3]
    # fill_row_geometry
    pad_w = pad[1]; q_min = pad_w//SW; q_count = (Wo-1+pad_w)//SW - q_min + 1
    stride_h, pad_h, dil_h = s[0], pad[0], dil[0]
    tap = {}
    for th in range(KH):
        td = th*dil_h; r = td % stride_h
        tap.setdefault(r, []).append((th, (td-r)//stride_h))
    row_taps = max(len(v) for v in tap.values())
    cbpg = (cout_g+15)//16; steps = (cin_g+7)//8; items = (q_count+ITEMQ-1)//ITEMQ
    first = q_min - KOFF
    iw_base = first//4*4 if first >= 0 else -((3-first)//4*4)
    lead = first - iw_base; assert 0 <= lead < 4 and iw_base % 4 == 0
    loads = (lead + TILES + KOFF + 3)//4
    x_pitch = rup(ITEMQ*items - 4 + 4*loads, 8)
    KZM = (SW+2)//4*4
    z_stride = rup(KZM + 3 + (q_min + ITEMQ*items)*SW - pad_w, 4)
    FRAG = 256
    w_floats = row_taps*steps*KW*FRAG; x_floats = row_taps*8*steps*x_pitch; z_floats = 16*z_stride
    alias = items <= WARPS; z_offset = 0 if alias else x_floats
    # prep
    total = groups*cbpg*KH*steps*KW*FRAG
    wp = np.zeros(total)
    for e in range(total):
        r = e; el = r%4; r//=4; lane = r%32; r//=32; half = r%2; r//=2; t = r%KW; r//=KW
        step = r%steps; r//=steps; th = r%KH; r//=KH; cb = r%cbpg; group = r//cbpg
        co = cb*16 + lane//4 + 8*(el&1); c = 8*step + lane%4 + 4*(el>>1)
        v = w[group*cin_g + c, co, th, t] if (co < cout_g and c < cin_g) else 0.0
        wp[e] = v if half == 0 else 0.0   # big carries the value; small 0 (exact emulation)
    y = np.full((N, groups*cout_g, Ho, Wo), np.nan)
    yflat = y.reshape(-1)
    for n in range(N):
      for oh in range(Ho):
        for cbg in range(groups*cbpg):
          group = cbg//cbpg; co0 = cbg % cbpg * 16; co_count = min(16, cout_g-co0)
          plane = Ho*Wo
          out_index = ((n*groups*cout_g + group*cout_g + co0)*Ho + oh)*Wo
          u = oh + pad_h; q = u//stride_h; r = u - q*stride_h
          slots_l = []
          for (th, back) in tap.get(r, []):
              ih = q - back
              if 0 <= ih < H: slots_l.append((th, ih))
          if not slots_l:
              for c in range(co_count): yflat[out_index + c*plane: out_index + c*plane + Wo] = 0
              continue
          smem = np.full(w_floats + (max(x_floats, z_floats) if alias else x_floats + z_floats), np.nan)
          ws0, xs0 = 0, w_floats; z0 = xs0 + z_offset
          rows = 8*steps
          for slot, (th, ih) in enumerate(slots_l):
              for ci in range(rows):
                  for k in range(x_pitch):
                      iw = iw_base + k
                      smem[xs0 + slot*rows*x_pitch + ci*x_pitch + k] = x[n, group*cin_g+ci, ih, iw] if (ci < cin_g and 0 <= iw < W) else 0.0
              pieces = steps*KW*FRAG//4
              blk = (group*cbpg + co0//16)*KH + th
              smem[ws0 + slot*pieces*4: ws0 + (slot+1)*pieces*4] = wp[blk*pieces*4:(blk+1)*pieces*4]
          slots = len(slots_l)
          rounds = (items + WARPS - 1)//WARPS
          for rnd in range(rounds):
            accs = {}
            for warp in range(WARPS):
              item = rnd*WARPS + warp
              if item >= items: continue
              acc = np.zeros((SW, TILES, 32, 4))
              for ss in range(slots*steps):
                # per lane windows
                bwin = np.zeros((32, 2, TILES+KOFF))
                for lane in range(32):
                    g, tig = lane//4, lane%4
                    xl = xs0 + tig*x_pitch + item*ITEMQ + 4*g
                    for h in range(2):
                        row = xl + (8*ss + 4*h)*x_pitch
                        v = smem[row: row + 4*loads]
                        assert len(v) == 4*loads and row + 4*loads <= xs0 + slots*rows*x_pitch, "window past the staged x"
                        for uu in range(TILES+KOFF): bwin[lane, h, uu] = v[lead+uu]
                for t in range(KW):
                    A = np.zeros((16, 8)); 
                    for lane in range(32):
                        g, tig = lane//4, lane%4
                        a = smem[ws0 + ss*KW*FRAG + t*FRAG + lane*4: ws0 + ss*KW*FRAG + t*FRAG + lane*4 + 4]
                        A[g, tig], A[g+8, tig], A[g, tig+4], A[g+8, tig+4] = a
                    rr = phase(t); u0 = KOFF - offset(t)
                    for j in range(TILES):
                        B = np.zeros((8, 8))
                        for lane in range(32):
                            g, tig = lane//4, lane%4
                            B[tig, g] = bwin[lane, 0, j+u0]; B[tig+4, g] = bwin[lane, 1, j+u0]
                        D = A @ B
                        for lane in range(32):
                            g, tig = lane//4, lane%4
                            acc[rr, j, lane] += [D[g, 2*tig], D[g, 2*tig+1], D[g+8, 2*tig], D[g+8, 2*tig+1]]
              accs[warp] = acc
            for warp, acc in accs.items():
              item = rnd*WARPS + warp
              out_phase = out_index & 3; plane4 = plane & 3
              for lane in range(32):
                g, tig = lane//4, lane%4
                ow0 = (q_min + item*ITEMQ + 8*tig)*SW - pad_w + KZM
                for h in range(2):
                    co = g + 8*h
                    zr = z0 + co*z_stride + ((out_phase + co*plane4) & 3) + ow0
                    assert zr >= z0 and zr + (2*TILES)*SW <= z0 + z_floats, "z write out of its row block"
                    # z_pairs_aligned: the run goes out as 8-byte stores, so it must start even
                    pairs = plane % 2 == 0 and (out_phase + q_min*SW - pad_w) % 2 == 0
                    assert not pairs or zr % 2 == 0, "paired z stores misaligned"
                    for e in range(2*TILES*SW):  # run index e: position e // SW, phase e % SW
                        pos, rr = e // SW, e % SW
                        smem[zr + e] = acc[rr, pos % TILES, lane, 2*h + pos // TILES]
          # store_pass
          for row in range(min(16, co_count)):
              dst = out_index + row*plane
              src = z0 + row*z_stride + KZM + (dst & 3)
              yflat[dst:dst+Wo] = smem[src:src+Wo]
    return y

rng = np.random.default_rng(1)
failed = False
shapes = [  # N, C_in, C_out, H, W, groups, stride, pad, dil, outpad
  (1, 32, 64, 4, 64, 4, (2,3), (1,2), (2,1), (0,0)),   # the preset's layer, narrow (lead 3)
  (2, 20, 44, 3, 61, 4, (2,3), (1,2), (2,1), (0,0)),   # cin_g 5, cout_g 11, odd W
  (1, 36, 20, 3, 300, 4, (2,3), (1,2), (2,1), (0,0)),  # cin_g 9 (2 steps), wide rows (no alias)
  (1, 8, 24, 3, 37, 2, (2,3), (4,7), (2,1), (1,2)),    # other paddings: q_min 2, lead 1; out pad
  (1, 8, 8, 4, 40, 1, (1,3), (0,3), (1,1), (0,0)),     # q_min 1, lead 0, stride_h 1 (3 slots)
  (1, 4, 4, 3, 21, 1, (3,3), (2,9), (1,1), (2,0)),     # q_min 3, lead 2, stride_h 3, out pad
]
if KW == 3 and SW == 5:
    shapes = [(1, 32, 64, 3, 40, 1, (5,5), (1,1), (2,2), (0,0)),   # L1_081's layer
              (2, 12, 20, 2, 23, 1, (5,5), (1,1), (2,2), (0,0)),   # odd W, 12 -> 20 channels
              (1, 40, 8, 2, 70, 4, (5,5), (3,6), (2,2), (1,3))]   # other paddings, groups 4
for sh in shapes:
    N, Ci, Co, H, W, G, s, pad, dil, op = sh
    x = rng.standard_normal((N, Ci, H, W)); w = rng.standard_normal((Ci, Co//G, 3, KW))
    ref = reference(x, w, G, s, pad, dil, op)
    got = emulate(x, w, G, s, pad, dil, op, ref.shape)
    err = np.nanmax(np.abs(got-ref)) if not np.isnan(got).any() else float('nan')
    ok = not np.isnan(got).any() and err < 1e-9
    failed |= not ok
    print("ok  " if ok else "FAIL", sh, ref.shape, "nan:", int(np.isnan(got).sum()), "max err", err,
          flush=True)
sys.exit(1 if failed else 0)
