/**
 * Geodesic distance and destination on an ellipsoid: a line-by-line TypeScript port of the C
 * implementation of Karney's algorithms (C. F. F. Karney, "Algorithms for geodesics", J. Geodesy
 * 87, 43–55, 2013; MIT/X11 licence) in the version RethinkDB 2.4 vendors
 * (`src/rdb_protocol/geo/karney/geodesic.cc`), limited to what RethinkDB calls: `geod_inverse`
 * for the distance only and `geod_direct` for latitude and longitude. Newer GeographicLib releases
 * (the `geographiclib-geodesic` package) solve short and nearly antipodal lines differently, so
 * their results differ from RethinkDB's well beyond rounding there (get_nearest's distances);
 * the same operations run here in the same order.
 */

const ORDER = 6; // GEOGRAPHICLIB_GEODESIC_ORDER
const nC1 = ORDER;
const nC1p = ORDER;
const nC2 = ORDER;
const nA3x = ORDER;
const nC3 = ORDER;
const nC3x = (nC3 * (nC3 - 1)) / 2;

const digits = 53;
const epsilon = 2 ** -52;
const realmin = 2 ** -1022;
const pi = Math.PI;
const maxit1 = 20;
const maxit2 = maxit1 + digits + 10;
const tiny = Math.sqrt(realmin);
const tol0 = epsilon;
const tol1 = 200 * tol0;
const tol2 = Math.sqrt(tol0);
const tolb = tol0 * tol2;
const xthresh = 1000 * tol2;
const degree = pi / 180;

const sq = (x: number): number => x * x;
const hypotx = (x: number, y: number): number => Math.sqrt(x * x + y * y);
// The C code's minx/maxx: their ternaries treat NaN and -0 unlike Math.min/max.
// biome-ignore lint/complexity/useMathMinMax: ported as written
const minx = (x: number, y: number): number => (x < y ? x : y);
// biome-ignore lint/complexity/useMathMinMax: ported as written
const maxx = (x: number, y: number): number => (x > y ? x : y);

function cbrtx(x: number): number {
  const y = Math.abs(x) ** (1 / 3);
  return x < 0 ? -y : y;
}

/** Error-free sum: [s, t] with u + v = s + t exactly. */
function sumx(u: number, v: number): [number, number] {
  const s = u + v;
  let up = s - v;
  let vpp = s - up;
  up -= u;
  vpp -= v;
  return [s, -(up + vpp)];
}

function sinCosNorm(s: number, c: number): [number, number] {
  const r = hypotx(s, c);
  return [s / r, c / r];
}

const angNormalize = (x: number): number => (x >= 180 ? x - 360 : x < -180 ? x + 360 : x);
const angNormalize2 = (x: number): number => angNormalize(x % 360);

function angDiff(x: number, y: number): number {
  let [d, t] = sumx(-x, y);
  if (d - 180 + t > 0) d -= 360;
  else if (d + 180 + t <= 0) d += 360;
  return d + t;
}

function angRound(x: number): number {
  const z = 1 / 16;
  let y = Math.abs(x);
  y = y < z ? z - (z - y) : y;
  return x < 0 ? -y : y;
}

/** Clenshaw summation of a sine (sinp) or cosine series; c[0] is unused for sines. */
function sinCosSeries(sinp: boolean, sinx: number, cosx: number, c: Float64Array, n: number): number {
  let at = n + (sinp ? 1 : 0);
  const ar = 2 * (cosx - sinx) * (cosx + sinx);
  let y0 = n & 1 ? (c[--at] as number) : 0;
  let y1 = 0;
  let m = n >> 1;
  while (m--) {
    y1 = ar * y0 - y1 + (c[--at] as number);
    y0 = ar * y1 - y0 + (c[--at] as number);
  }
  return sinp ? 2 * sinx * cosx * y0 : cosx * (y0 - y1);
}

function a1m1f(eps: number): number {
  const eps2 = sq(eps);
  const t = (eps2 * (eps2 * (eps2 + 4) + 64)) / 256;
  return (t + eps) / (1 - eps);
}

function c1f(eps: number, c: Float64Array): void {
  const eps2 = sq(eps);
  let d = eps;
  c[1] = (d * ((6 - eps2) * eps2 - 16)) / 32;
  d *= eps;
  c[2] = (d * ((64 - 9 * eps2) * eps2 - 128)) / 2048;
  d *= eps;
  c[3] = (d * (9 * eps2 - 16)) / 768;
  d *= eps;
  c[4] = (d * (3 * eps2 - 5)) / 512;
  d *= eps;
  c[5] = (-7 * d) / 1280;
  d *= eps;
  c[6] = (-7 * d) / 2048;
}

function c1pf(eps: number, c: Float64Array): void {
  const eps2 = sq(eps);
  let d = eps;
  c[1] = (d * (eps2 * (205 * eps2 - 432) + 768)) / 1536;
  d *= eps;
  c[2] = (d * (eps2 * (4005 * eps2 - 4736) + 3840)) / 12288;
  d *= eps;
  c[3] = (d * (116 - 225 * eps2)) / 384;
  d *= eps;
  c[4] = (d * (2695 - 7173 * eps2)) / 7680;
  d *= eps;
  c[5] = (3467 * d) / 7680;
  d *= eps;
  c[6] = (38081 * d) / 61440;
}

function a2m1f(eps: number): number {
  const eps2 = sq(eps);
  const t = (eps2 * (eps2 * (25 * eps2 + 36) + 64)) / 256;
  return t * (1 - eps) - eps;
}

function c2f(eps: number, c: Float64Array): void {
  const eps2 = sq(eps);
  let d = eps;
  c[1] = (d * (eps2 * (eps2 + 2) + 16)) / 32;
  d *= eps;
  c[2] = (d * (eps2 * (35 * eps2 + 64) + 384)) / 2048;
  d *= eps;
  c[3] = (d * (15 * eps2 + 80)) / 768;
  d *= eps;
  c[4] = (d * (7 * eps2 + 35)) / 512;
  d *= eps;
  c[5] = (63 * d) / 1280;
  d *= eps;
  c[6] = (77 * d) / 2048;
}

function astroid(x: number, y: number): number {
  const p = sq(x);
  const q = sq(y);
  const r = (p + q - 1) / 6;
  if (q === 0 && r <= 0) return 0;
  const S = (p * q) / 4;
  const r2 = sq(r);
  const r3 = r * r2;
  const disc = S * (S + 2 * r3);
  let u = r;
  if (disc >= 0) {
    let T3 = S + r3;
    T3 += T3 < 0 ? -Math.sqrt(disc) : Math.sqrt(disc);
    const T = cbrtx(T3);
    u += T + (T !== 0 ? r2 / T : 0);
  } else {
    const ang = Math.atan2(Math.sqrt(-disc), -(S + r3));
    u += 2 * r * Math.cos(ang / 3);
  }
  const v = Math.sqrt(sq(u) + q);
  const uv = u < 0 ? q / (v - u) : u + v;
  const w = (uv - q) / (2 * v);
  return uv / (Math.sqrt(uv + sq(w)) + w);
}

export class KarneyGeodesic {
  private readonly a: number;
  private readonly f: number;
  private readonly f1: number;
  private readonly ep2: number;
  private readonly n: number;
  private readonly b: number;
  private readonly etol2: number;
  private readonly A3x = new Float64Array(6);
  private readonly C3x = new Float64Array(15);
  // Scratch areas (index 0 of C1a and C2a unused), as the C code's.
  private readonly C1a = new Float64Array(nC1 + 1);
  private readonly C2a = new Float64Array(nC2 + 1);
  private readonly C3a = new Float64Array(nC3);

  constructor(a: number, f: number) {
    this.a = a;
    this.f = f <= 1 ? f : 1 / f;
    this.f1 = 1 - this.f;
    const e2 = this.f * (2 - this.f);
    this.ep2 = e2 / sq(this.f1);
    this.n = this.f / (2 - this.f);
    this.b = this.a * this.f1;
    this.etol2 = (0.1 * tol2) / Math.sqrt((maxx(0.001, Math.abs(this.f)) * minx(1, 1 - this.f / 2)) / 2);
    const n = this.n;
    const A3x = this.A3x;
    A3x[0] = 1;
    A3x[1] = (n - 1) / 2;
    A3x[2] = (n * (3 * n - 1) - 2) / 8;
    A3x[3] = ((-n - 3) * n - 1) / 16;
    A3x[4] = (-2 * n - 3) / 64;
    A3x[5] = -3 / 128;
    const C3x = this.C3x;
    C3x[0] = (1 - n) / 4;
    C3x[1] = (1 - n * n) / 8;
    C3x[2] = ((3 - n) * n + 3) / 64;
    C3x[3] = (2 * n + 5) / 128;
    C3x[4] = 3 / 128;
    C3x[5] = ((n - 3) * n + 2) / 32;
    C3x[6] = ((-3 * n - 2) * n + 3) / 64;
    C3x[7] = (n + 3) / 128;
    C3x[8] = 5 / 256;
    C3x[9] = (n * (5 * n - 9) + 5) / 192;
    C3x[10] = (9 - 10 * n) / 384;
    C3x[11] = 7 / 512;
    C3x[12] = (7 - 14 * n) / 512;
    C3x[13] = 7 / 512;
    C3x[14] = 21 / 2560;
  }

  private a3f(eps: number): number {
    let v = 0;
    for (let i = nA3x; i; ) v = eps * v + (this.A3x[--i] as number);
    return v;
  }

  private c3f(eps: number, c: Float64Array): void {
    let j = nC3x;
    for (let k = nC3 - 1; k; ) {
      let t = 0;
      for (let i = nC3 - k; i; --i) t = eps * t + (this.C3x[--j] as number);
      c[k--] = t;
    }
    let mult = 1;
    for (let k = 1; k < nC3; k++) {
      mult *= eps;
      c[k] = (c[k] as number) * mult;
    }
  }

  /** Lengths without the geodesic scale: [s12b, m12b, m0]. */
  private lengths(
    eps: number,
    sig12: number,
    ssig1: number,
    csig1: number,
    dn1: number,
    ssig2: number,
    csig2: number,
    dn2: number,
  ): [number, number, number] {
    const { C1a, C2a } = this;
    c1f(eps, C1a);
    c2f(eps, C2a);
    const A1m1 = a1m1f(eps);
    const AB1 = (1 + A1m1) * (sinCosSeries(true, ssig2, csig2, C1a, nC1) - sinCosSeries(true, ssig1, csig1, C1a, nC1));
    const A2m1 = a2m1f(eps);
    const AB2 = (1 + A2m1) * (sinCosSeries(true, ssig2, csig2, C2a, nC2) - sinCosSeries(true, ssig1, csig1, C2a, nC2));
    const m0 = A1m1 - A2m1;
    const J12 = m0 * sig12 + (AB1 - AB2);
    const m12b = dn2 * (csig1 * ssig2) - dn1 * (ssig1 * csig2) - csig1 * csig2 * J12;
    const s12b = (1 + A1m1) * sig12 + AB1;
    return [s12b, m12b, m0];
  }

  /** InverseStart: [sig12, salp1, calp1, dnm]. */
  private inverseStart(
    sbet1: number,
    cbet1: number,
    dn1: number,
    sbet2: number,
    cbet2: number,
    dn2: number,
    lam12: number,
  ): [number, number, number, number] {
    let salp1: number;
    let calp1: number;
    let dnm = 0;
    let sig12 = -1;
    const sbet12 = sbet2 * cbet1 - cbet2 * sbet1;
    const cbet12 = cbet2 * cbet1 + sbet2 * sbet1;
    const sbet12a = sbet2 * cbet1 + cbet2 * sbet1;
    const shortline = cbet12 >= 0 && sbet12 < 0.5 && cbet2 * lam12 < 0.5;
    let omg12 = lam12;
    if (shortline) {
      let sbetm2 = sq(sbet1 + sbet2);
      sbetm2 /= sbetm2 + sq(cbet1 + cbet2);
      dnm = Math.sqrt(1 + this.ep2 * sbetm2);
      omg12 /= this.f1 * dnm;
    }
    let somg12 = Math.sin(omg12);
    let comg12 = Math.cos(omg12);
    salp1 = cbet2 * somg12;
    calp1 =
      comg12 >= 0
        ? sbet12 + (cbet2 * sbet1 * sq(somg12)) / (1 + comg12)
        : sbet12a - (cbet2 * sbet1 * sq(somg12)) / (1 - comg12);
    const ssig12 = hypotx(salp1, calp1);
    const csig12 = sbet1 * sbet2 + cbet1 * cbet2 * comg12;
    if (shortline && ssig12 < this.etol2) {
      sig12 = Math.atan2(ssig12, csig12);
    } else if (Math.abs(this.n) > 0.1 || csig12 >= 0 || ssig12 >= 6 * Math.abs(this.n) * pi * sq(cbet1)) {
      // The zeroth-order spherical approximation is the starting point.
    } else {
      let x: number;
      let y: number;
      let lamscale: number;
      let betscale: number;
      if (this.f >= 0) {
        const k2 = sq(sbet1) * this.ep2;
        const eps = k2 / (2 * (1 + Math.sqrt(1 + k2)) + k2);
        lamscale = this.f * cbet1 * this.a3f(eps) * pi;
        betscale = lamscale * cbet1;
        x = (lam12 - pi) / lamscale;
        y = sbet12a / betscale;
      } else {
        const cbet12a = cbet2 * cbet1 - sbet2 * sbet1;
        const bet12a = Math.atan2(sbet12a, cbet12a);
        const [, m12b, m0] = this.lengths(this.n, pi + bet12a, sbet1, -cbet1, dn1, sbet2, cbet2, dn2);
        x = -1 + m12b / (cbet1 * cbet2 * m0 * pi);
        betscale = x < -0.01 ? sbet12a / x : -this.f * sq(cbet1) * pi;
        lamscale = betscale / cbet1;
        y = (lam12 - pi) / lamscale;
      }
      if (y > -tol1 && x > -1 - xthresh) {
        if (this.f >= 0) {
          salp1 = minx(1, -x);
          calp1 = -Math.sqrt(1 - sq(salp1));
        } else {
          calp1 = maxx(x > -tol1 ? 0 : -1, x);
          salp1 = Math.sqrt(1 - sq(calp1));
        }
      } else {
        const k = astroid(x, y);
        const omg12a = lamscale * (this.f >= 0 ? (-x * k) / (1 + k) : (-y * (1 + k)) / k);
        somg12 = Math.sin(omg12a);
        comg12 = -Math.cos(omg12a);
        salp1 = cbet2 * somg12;
        calp1 = sbet12a - (cbet2 * sbet1 * sq(somg12)) / (1 - comg12);
      }
    }
    if (salp1 > 0) [salp1, calp1] = sinCosNorm(salp1, calp1);
    else {
      salp1 = 1;
      calp1 = 0;
    }
    return [sig12, salp1, calp1, dnm];
  }

  /** Lambda12: [lam12, sig12, ssig1, csig1, ssig2, csig2, eps, dlam12]. */
  private lambda12(
    sbet1: number,
    cbet1: number,
    dn1: number,
    sbet2: number,
    cbet2: number,
    dn2: number,
    salp1: number,
    calp1In: number,
    diffp: boolean,
  ): [number, number, number, number, number, number, number, number] {
    const calp1 = sbet1 === 0 && calp1In === 0 ? -tiny : calp1In;
    const salp0 = salp1 * cbet1;
    const calp0 = hypotx(calp1, salp1 * sbet1);
    const somg1 = salp0 * sbet1;
    const comg1 = calp1 * cbet1;
    const [ssig1, csig1] = sinCosNorm(sbet1, comg1);
    const calp2 =
      cbet2 !== cbet1 || Math.abs(sbet2) !== -sbet1
        ? Math.sqrt(
            sq(calp1 * cbet1) +
              (cbet1 < -sbet1 ? (cbet2 - cbet1) * (cbet1 + cbet2) : (sbet1 - sbet2) * (sbet1 + sbet2)),
          ) / cbet2
        : Math.abs(calp1);
    const somg2 = salp0 * sbet2;
    const comg2 = calp2 * cbet2;
    const [ssig2, csig2] = sinCosNorm(sbet2, comg2);
    const sig12 = Math.atan2(maxx(csig1 * ssig2 - ssig1 * csig2, 0), csig1 * csig2 + ssig1 * ssig2);
    const omg12 = Math.atan2(maxx(comg1 * somg2 - somg1 * comg2, 0), comg1 * comg2 + somg1 * somg2);
    const k2 = sq(calp0) * this.ep2;
    const eps = k2 / (2 * (1 + Math.sqrt(1 + k2)) + k2);
    this.c3f(eps, this.C3a);
    const B312 =
      sinCosSeries(true, ssig2, csig2, this.C3a, nC3 - 1) - sinCosSeries(true, ssig1, csig1, this.C3a, nC3 - 1);
    const h0 = -this.f * this.a3f(eps);
    const domg12 = salp0 * h0 * (sig12 + B312);
    const lam12 = omg12 + domg12;
    let dlam12 = 0;
    if (diffp) {
      if (calp2 === 0) dlam12 = (-2 * this.f1 * dn1) / sbet1;
      else {
        dlam12 = this.lengths(eps, sig12, ssig1, csig1, dn1, ssig2, csig2, dn2)[1];
        dlam12 *= this.f1 / (calp2 * cbet2);
      }
    }
    return [lam12, sig12, ssig1, csig1, ssig2, csig2, eps, dlam12];
  }

  /** geod_inverse's distance between two positions (in the ellipsoid's unit). */
  distance(lat1In: number, lon1: number, lat2In: number, lon2: number): number {
    let lat1 = lat1In;
    let lat2 = lat2In;
    let lon12 = angRound(angDiff(angNormalize(lon1), angNormalize(lon2)));
    lon12 *= lon12 >= 0 ? 1 : -1;
    lat1 = angRound(lat1);
    lat2 = angRound(lat2);
    if (Math.abs(lat1) < Math.abs(lat2)) [lat1, lat2] = [lat2, lat1];
    const latsign = lat1 < 0 ? 1 : -1;
    lat1 *= latsign;
    lat2 *= latsign;

    let phi = lat1 * degree;
    const [sbet1, cbet1] = sinCosNorm(this.f1 * Math.sin(phi), lat1 === -90 ? tiny : Math.cos(phi));
    phi = lat2 * degree;
    let [sbet2, cbet2] = sinCosNorm(this.f1 * Math.sin(phi), Math.abs(lat2) === 90 ? tiny : Math.cos(phi));
    if (cbet1 < -sbet1) {
      if (cbet2 === cbet1) sbet2 = sbet2 < 0 ? sbet1 : -sbet1;
    } else if (Math.abs(sbet2) === -sbet1) cbet2 = cbet1;

    const dn1 = Math.sqrt(1 + this.ep2 * sq(sbet1));
    const dn2 = Math.sqrt(1 + this.ep2 * sq(sbet2));
    const lam12 = lon12 * degree;
    const slam12 = lon12 === 180 ? 0 : Math.sin(lam12);
    const clam12 = Math.cos(lam12);
    let meridian = lat1 === -90 || slam12 === 0;
    let s12x = 0;

    if (meridian) {
      const ssig1 = sbet1;
      const csig1 = clam12 * cbet1;
      const ssig2 = sbet2;
      const csig2 = cbet2;
      const sig12 = Math.atan2(maxx(csig1 * ssig2 - ssig1 * csig2, 0), csig1 * csig2 + ssig1 * ssig2);
      const [s12b, m12b] = this.lengths(this.n, sig12, ssig1, csig1, dn1, ssig2, csig2, dn2);
      if (sig12 < 1 || m12b >= 0) s12x = s12b * this.b;
      else meridian = false;
    }

    if (!meridian && sbet1 === 0 && (this.f <= 0 || lam12 <= pi - this.f * pi)) {
      s12x = this.a * lam12; // along the equator
    } else if (!meridian) {
      let [sig12, salp1, calp1, dnm] = this.inverseStart(sbet1, cbet1, dn1, sbet2, cbet2, dn2, lam12);
      if (sig12 >= 0) {
        s12x = sig12 * this.b * dnm; // a short line
      } else {
        // Newton's method on alp1, keeping a bracket of the root.
        let ssig1 = 0;
        let csig1 = 0;
        let ssig2 = 0;
        let csig2 = 0;
        let eps = 0;
        let salp1a = tiny;
        let calp1a = 1;
        let salp1b = tiny;
        let calp1b = -1;
        let tripn = false;
        let tripb = false;
        for (let numit = 0; numit < maxit2; ++numit) {
          const r = this.lambda12(sbet1, cbet1, dn1, sbet2, cbet2, dn2, salp1, calp1, numit < maxit1);
          const v = r[0] - lam12;
          [, sig12, ssig1, csig1, ssig2, csig2, eps] = r;
          const dv = r[7];
          if (tripb || !(Math.abs(v) >= (tripn ? 8 : 2) * tol0)) break;
          if (v > 0 && (numit > maxit1 || calp1 / salp1 > calp1b / salp1b)) {
            salp1b = salp1;
            calp1b = calp1;
          } else if (v < 0 && (numit > maxit1 || calp1 / salp1 < calp1a / salp1a)) {
            salp1a = salp1;
            calp1a = calp1;
          }
          if (numit < maxit1 && dv > 0) {
            const dalp1 = -v / dv;
            const sdalp1 = Math.sin(dalp1);
            const cdalp1 = Math.cos(dalp1);
            const nsalp1 = salp1 * cdalp1 + calp1 * sdalp1;
            if (nsalp1 > 0 && Math.abs(dalp1) < pi) {
              calp1 = calp1 * cdalp1 - salp1 * sdalp1;
              salp1 = nsalp1;
              [salp1, calp1] = sinCosNorm(salp1, calp1);
              tripn = Math.abs(v) <= 16 * tol0;
              continue;
            }
          }
          salp1 = (salp1a + salp1b) / 2;
          calp1 = (calp1a + calp1b) / 2;
          [salp1, calp1] = sinCosNorm(salp1, calp1);
          tripn = false;
          tripb =
            Math.abs(salp1a - salp1) + (calp1a - calp1) < tolb || Math.abs(salp1 - salp1b) + (calp1 - calp1b) < tolb;
        }
        s12x = this.lengths(eps, sig12, ssig1, csig1, dn1, ssig2, csig2, dn2)[0] * this.b;
      }
    }
    return 0 + s12x;
  }

  /** geod_direct's destination [lat2, lon2] from (lat1, lon1) along azimuth azi1 for s12. */
  destination(lat1: number, lon1In: number, azi1In: number, s12: number): [number, number] {
    const azi1 = angRound(angNormalize(azi1In));
    const lon1 = angNormalize(lon1In);
    const alp1 = azi1 * degree;
    const salp1 = azi1 === -180 ? 0 : Math.sin(alp1);
    const calp1 = Math.abs(azi1) === 90 ? 0 : Math.cos(alp1);
    const phi = lat1 * degree;
    const [sbet1, cbet1] = sinCosNorm(this.f1 * Math.sin(phi), Math.abs(lat1) === 90 ? tiny : Math.cos(phi));
    const salp0 = salp1 * cbet1;
    const calp0 = hypotx(calp1, salp1 * sbet1);
    const somg1 = salp0 * sbet1;
    const comg1 = sbet1 !== 0 || calp1 !== 0 ? cbet1 * calp1 : 1;
    const [ssig1, csig1] = sinCosNorm(sbet1, comg1);
    const k2 = sq(calp0) * this.ep2;
    const eps = k2 / (2 * (1 + Math.sqrt(1 + k2)) + k2);
    const C1a = new Float64Array(nC1 + 1);
    const A1m1 = a1m1f(eps);
    c1f(eps, C1a);
    const B11 = sinCosSeries(true, ssig1, csig1, C1a, nC1);
    const s = Math.sin(B11);
    const c = Math.cos(B11);
    const stau1 = ssig1 * c + csig1 * s;
    const ctau1 = csig1 * c - ssig1 * s;
    const C1pa = new Float64Array(nC1p + 1);
    c1pf(eps, C1pa);
    const C3a = new Float64Array(nC3);
    this.c3f(eps, C3a);
    const A3c = -this.f * salp0 * this.a3f(eps);
    const B31 = sinCosSeries(true, ssig1, csig1, C3a, nC3 - 1);

    // geod_genposition in distance mode, for latitude and longitude.
    const tau12 = s12 / (this.b * (1 + A1m1));
    const st = Math.sin(tau12);
    const ct = Math.cos(tau12);
    let B12 = -sinCosSeries(true, stau1 * ct + ctau1 * st, ctau1 * ct - stau1 * st, C1pa, nC1p);
    let sig12 = tau12 - (B12 - B11);
    let ssig12 = Math.sin(sig12);
    let csig12 = Math.cos(sig12);
    if (Math.abs(this.f) > 0.01) {
      const ssig2p = ssig1 * csig12 + csig1 * ssig12;
      const csig2p = csig1 * csig12 - ssig1 * ssig12;
      B12 = sinCosSeries(true, ssig2p, csig2p, C1a, nC1);
      const serr = (1 + A1m1) * (sig12 + (B12 - B11)) - s12 / this.b;
      sig12 = sig12 - serr / Math.sqrt(1 + k2 * sq(ssig2p));
      ssig12 = Math.sin(sig12);
      csig12 = Math.cos(sig12);
    }
    const ssig2 = ssig1 * csig12 + csig1 * ssig12;
    let csig2 = csig1 * csig12 - ssig1 * ssig12;
    const sbet2 = calp0 * ssig2;
    let cbet2 = hypotx(salp0, calp0 * csig2);
    if (cbet2 === 0) {
      cbet2 = tiny;
      csig2 = tiny;
    }
    const somg2 = salp0 * ssig2;
    const comg2 = csig2;
    const omg12 = Math.atan2(somg2 * comg1 - comg2 * somg1, comg2 * comg1 + somg2 * somg1);
    const lam12 = omg12 + A3c * (sig12 + (sinCosSeries(true, ssig2, csig2, C3a, nC3 - 1) - B31));
    const lon2 = angNormalize(lon1 + angNormalize2(lam12 / degree));
    const lat2 = Math.atan2(sbet2, this.f1 * cbet2) / degree;
    return [lat2, lon2];
  }
}
