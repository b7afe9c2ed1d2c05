/**
 * Strings (RethinkDB's string.cc, case.cc): match, split, upcase, downcase.
 */
import { queryLogic } from '../../errors.js';
import type { Node } from '../compiler.js';
import { type Datum, newObject, typeError } from '../datum.js';
import { T } from '../names.js';
import type { TermDef, TermFamily } from '../registry.js';

/** Unicode combining marks, as closed code point ranges (RethinkDB's table, so splits agree). */
const COMBINING: readonly (readonly [number, number])[] = [
  [768, 879],
  [1155, 1161],
  [1425, 1469],
  [1471, 1471],
  [1473, 1474],
  [1476, 1477],
  [1479, 1479],
  [1552, 1562],
  [1611, 1631],
  [1648, 1648],
  [1750, 1756],
  [1759, 1764],
  [1767, 1768],
  [1770, 1773],
  [1809, 1809],
  [1840, 1866],
  [1958, 1968],
  [2027, 2035],
  [2070, 2073],
  [2075, 2083],
  [2085, 2087],
  [2089, 2093],
  [2137, 2139],
  [2276, 2302],
  [2304, 2307],
  [2362, 2364],
  [2366, 2383],
  [2385, 2391],
  [2402, 2403],
  [2433, 2435],
  [2492, 2492],
  [2494, 2500],
  [2503, 2504],
  [2507, 2509],
  [2519, 2519],
  [2530, 2531],
  [2561, 2563],
  [2620, 2620],
  [2622, 2626],
  [2631, 2632],
  [2635, 2637],
  [2641, 2641],
  [2672, 2673],
  [2677, 2677],
  [2689, 2691],
  [2748, 2748],
  [2750, 2757],
  [2759, 2761],
  [2763, 2765],
  [2786, 2787],
  [2817, 2819],
  [2876, 2876],
  [2878, 2884],
  [2887, 2888],
  [2891, 2893],
  [2902, 2903],
  [2914, 2915],
  [2946, 2946],
  [3006, 3010],
  [3014, 3016],
  [3018, 3021],
  [3031, 3031],
  [3073, 3075],
  [3134, 3140],
  [3142, 3144],
  [3146, 3149],
  [3157, 3158],
  [3170, 3171],
  [3202, 3203],
  [3260, 3260],
  [3262, 3268],
  [3270, 3272],
  [3274, 3277],
  [3285, 3286],
  [3298, 3299],
  [3330, 3331],
  [3390, 3396],
  [3398, 3400],
  [3402, 3405],
  [3415, 3415],
  [3426, 3427],
  [3458, 3459],
  [3530, 3530],
  [3535, 3540],
  [3542, 3542],
  [3544, 3551],
  [3570, 3571],
  [3633, 3633],
  [3636, 3642],
  [3655, 3662],
  [3761, 3761],
  [3764, 3769],
  [3771, 3772],
  [3784, 3789],
  [3864, 3865],
  [3893, 3893],
  [3895, 3895],
  [3897, 3897],
  [3902, 3903],
  [3953, 3972],
  [3974, 3975],
  [3981, 3991],
  [3993, 4028],
  [4038, 4038],
  [4139, 4158],
  [4182, 4185],
  [4190, 4192],
  [4194, 4196],
  [4199, 4205],
  [4209, 4212],
  [4226, 4237],
  [4239, 4239],
  [4250, 4253],
  [4957, 4959],
  [5906, 5908],
  [5938, 5940],
  [5970, 5971],
  [6002, 6003],
  [6068, 6099],
  [6109, 6109],
  [6155, 6157],
  [6313, 6313],
  [6432, 6443],
  [6448, 6459],
  [6576, 6592],
  [6600, 6601],
  [6679, 6683],
  [6741, 6750],
  [6752, 6780],
  [6783, 6783],
  [6912, 6916],
  [6964, 6980],
  [7019, 7027],
  [7040, 7042],
  [7073, 7085],
  [7142, 7155],
  [7204, 7223],
  [7376, 7378],
  [7380, 7400],
  [7405, 7405],
  [7410, 7412],
  [7616, 7654],
  [7676, 7679],
  [8400, 8432],
  [11503, 11505],
  [11647, 11647],
  [11744, 11775],
  [12330, 12335],
  [12441, 12442],
  [42607, 42610],
  [42612, 42621],
  [42655, 42655],
  [42736, 42737],
  [43010, 43010],
  [43014, 43014],
  [43019, 43019],
  [43043, 43047],
  [43136, 43137],
  [43188, 43204],
  [43232, 43249],
  [43302, 43309],
  [43335, 43347],
  [43392, 43395],
  [43443, 43456],
  [43561, 43574],
  [43587, 43587],
  [43596, 43597],
  [43643, 43643],
  [43696, 43696],
  [43698, 43700],
  [43703, 43704],
  [43710, 43711],
  [43713, 43713],
  [43755, 43759],
  [43765, 43766],
  [44003, 44010],
  [44012, 44013],
  [64286, 64286],
  [65024, 65039],
  [65056, 65062],
  [66045, 66045],
  [68097, 68099],
  [68101, 68102],
  [68108, 68111],
  [68152, 68154],
  [68159, 68159],
  [69632, 69634],
  [69688, 69702],
  [69760, 69762],
  [69808, 69818],
  [69888, 69890],
  [69927, 69940],
  [70016, 70018],
  [70067, 70080],
  [71339, 71351],
  [94033, 94078],
  [94095, 94098],
  [119141, 119145],
  [119149, 119154],
  [119163, 119170],
  [119173, 119179],
  [119210, 119213],
  [119362, 119364],
  [917760, 917999],
];
const WHITESPACE: readonly (readonly [number, number])[] = [
  [9, 13],
  [32, 32],
  [133, 133],
  [160, 160],
  [5760, 5760],
  [8192, 8202],
  [8232, 8233],
  [8239, 8239],
  [8287, 8287],
  [12288, 12288],
];

function inRanges(ranges: readonly (readonly [number, number])[], c: number): boolean {
  let lo = 0;
  let hi = ranges.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const [a, b] = ranges[mid] as readonly [number, number];
    if (c < a) hi = mid - 1;
    else if (c > b) lo = mid + 1;
    else return true;
  }
  return false;
}
const isSpace = (cp: string): boolean => inRanges(WHITESPACE, cp.codePointAt(0) as number);
const isCombining = (cp: string): boolean => inRanges(COMBINING, cp.codePointAt(0) as number);

/** RethinkDB's UTF-8 aware split (2.1+): `delim` null splits on whitespace, '' into characters. */
export function splitString(s: string, delim: string | null, maxnum: number): string[] {
  const cps = [...s];
  const out: string[] = [];
  let i = 0;
  const n = cps.length;
  const text = (from: number, to: number): string => cps.slice(from, to).join('');
  const nonSpace = (from: number): number => {
    let j = from;
    while (j < n && isSpace(cps[j] as string)) j++;
    return j;
  };
  for (;;) {
    if (out.length === maxnum) {
      if (delim !== null) {
        if (delim.length > 0 || i !== n) out.push(text(i, n));
      } else {
        const start = nonSpace(i);
        if (start !== n) out.push(text(start, n));
      }
      return out;
    }
    if (delim === '') {
      if (i >= n) return out;
      let j = i + 1;
      while (j < n && isCombining(cps[j] as string)) j++;
      out.push(text(i, j));
      i = j;
      if (i === n) return out;
    } else if (delim !== null) {
      const rest = text(i, n);
      const at = rest.indexOf(delim);
      if (at < 0) {
        out.push(rest);
        return out;
      }
      const piece = rest.slice(0, at);
      out.push(piece);
      i += [...piece].length + [...delim].length;
    } else {
      let j = i;
      while (j < n && !isSpace(cps[j] as string)) j++;
      if (j === n) {
        const start = nonSpace(i);
        if (start !== n) out.push(text(start, n));
        return out;
      }
      if (j !== i) out.push(text(i, j));
      i = j + 1;
    }
  }
}

/** An RE2 pattern as a JS RegExp: leading (?flags) become RegExp flags. */
export function re2(pattern: string): RegExp {
  let flags = '';
  let body = pattern;
  const m = /^\(\?([imsU]+)\)/.exec(body);
  if (m) {
    body = body.slice(m[0].length);
    for (const f of m[1] as string) if (f !== 'U' && !flags.includes(f)) flags += f;
  }
  try {
    return new RegExp(body, `${flags}du`);
  } catch (err) {
    try {
      return new RegExp(body, `${flags}d`);
    } catch {
      throw queryLogic(`Error in regexp \`${pattern}\` (portion \`${pattern}\`): ${(err as Error).message}`);
    }
  }
}

const utf8Offset = (s: string, i: number): number => Buffer.byteLength(s.slice(0, i));

function caseTerm(f: (s: string) => string): TermDef {
  return { min: 1, max: 1, eval: async (ev, node, env) => f(await ev.string(node.args[0] as Node, env)) };
}

export const stringTerms: TermFamily = {
  [T.SPLIT]: {
    min: 1,
    max: 3,
    eval: async (ev, node, env) => {
      const a = node.args;
      const s = await ev.string(a[0] as Node, env);
      let delim: string | null = null;
      if (a.length > 1) {
        const d = await ev.evalDatum(a[1] as Node, env);
        if (d !== null) {
          if (typeof d !== 'string') throw typeError('STRING', d);
          delim = d;
        }
      }
      let maxnum = Number.POSITIVE_INFINITY;
      if (a.length > 2) {
        const limit = ev.deps.arrayLimit;
        const m = await ev.integer(a[2] as Node, env);
        if (m < -1 || m > limit - 1)
          throw queryLogic(`Error: \`split\` size argument must be in range [-1, ${limit - 1}].`);
        if (m >= 0) maxnum = m;
      }
      return splitString(s, delim, maxnum);
    },
  },
  [T.UPCASE]: caseTerm((s) => s.replace(/[a-z]+/g, (x) => x.toUpperCase())),
  [T.DOWNCASE]: caseTerm((s) => s.replace(/[A-Z]+/g, (x) => x.toLowerCase())),
  [T.MATCH]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const s = await ev.string(node.args[0] as Node, env);
      const pattern = await ev.string(node.args[1] as Node, env);
      const m = re2(pattern).exec(s);
      if (m === null) return null;
      const start = m.index;
      const end = start + m[0].length;
      const out = newObject();
      out.str = m[0];
      out.start = utf8Offset(s, start);
      out.end = utf8Offset(s, end);
      const groups: Datum[] = [];
      for (let g = 1; g < m.length; g++) {
        const span = m.indices?.[g];
        if (m[g] === undefined || span === undefined) groups.push(null);
        else groups.push({ str: m[g] as string, start: utf8Offset(s, span[0]), end: utf8Offset(s, span[1]) });
      }
      out.groups = groups;
      return out;
    },
  },
};
