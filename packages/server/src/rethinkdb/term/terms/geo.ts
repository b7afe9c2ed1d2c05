/**
 * Geospatial terms (RethinkDB's geo.cc over src/rdb_protocol/geo/): point, line, polygon,
 * circle, geojson, to_geojson, distance, intersects, includes, fill, polygon_sub,
 * get_intersecting, get_nearest. Geometries are the GEOMETRY pseudo-type (GeoJSON inside).
 * Geodesics (distance, circle) use Karney's algorithms on an ellipsoid (WGS84 by default) in the
 * version RethinkDB vendors (../karney-geodesic.ts), reading positions through S2's unit vectors
 * as RethinkDB does. Intersection and inclusion are computed on lon/lat edges, which
 * agrees with RethinkDB's great-circle edges except within a hair of an edge of a large shape.
 */
import { nonExistence, queryLogic } from '../../errors.js';
import type { Node, TermNode } from '../compiler.js';
import {
  type Datum,
  type DatumObject,
  datumsEqual,
  field,
  isObject,
  pretty,
  reconstructableDouble,
  typeError,
} from '../datum.js';
import type { Evaluator } from '../evaluator.js';
import { KarneyGeodesic } from '../karney-geodesic.js';
import { T } from '../names.js';
import { INF, type TermDef, type TermFamily } from '../registry.js';
import { type Env, expectType, Seq, TableRef } from '../values.js';

type P = [number, number];
interface Geometry {
  type: 'Point' | 'LineString' | 'Polygon';
  coordinates: Datum;
}

const UNITS: Record<string, number> = { m: 1, km: 1000, mi: 1609.344, nm: 1852, ft: 0.3048 };

function geometry(type: Geometry['type'], coordinates: Datum): DatumObject {
  return { $reql_type$: 'GEOMETRY', coordinates, type };
}

function checkPoint(lon: number, lat: number): P {
  if (lat < -90 || lat > 90) throw queryLogic(`Latitude must be between -90 and 90.  Got ${lat}.`);
  if (lon < -180 || lon > 180) throw queryLogic(`Longitude must be between -180 and 180.  Got ${lon}.`);
  return [lon, lat];
}

/** A point argument: r.point(...) or a [lon, lat] pair. */
function pointOf(v: Datum): P {
  if (Array.isArray(v)) {
    if (v.length !== 2)
      throw queryLogic(`Expected point coordinate pair.  Got ${v.length} element array instead of a 2 element one.`);
    const [lon, lat] = v;
    if (typeof lon !== 'number') throw typeError('NUMBER', lon as Datum);
    if (typeof lat !== 'number') throw typeError('NUMBER', lat as Datum);
    return checkPoint(lon, lat);
  }
  const g = asGeometry(v);
  if (g.type !== 'Point') throw queryLogic(`Expected geometry of type \`Point\` but found \`${g.type}\`.`);
  return g.coordinates as P;
}

function asGeometry(v: Datum): Geometry {
  if (!isObject(v) || field(v, '$reql_type$') !== 'GEOMETRY') throw typeError('PTYPE<GEOMETRY>', v);
  return { type: field(v, 'type') as Geometry['type'], coordinates: field(v, 'coordinates') as Datum };
}

const samePoint = (a: P, b: P): boolean => a[0] === b[0] && a[1] === b[1];
const antipodal = (a: P, b: P): boolean =>
  Math.abs(a[1] + b[1]) < 1e-12 && Math.abs(Math.abs(a[0] - b[0]) - 180) < 1e-12;

function checkLine(points: P[]): P[] {
  for (let i = 1; i < points.length; i++) {
    if (samePoint(points[i - 1] as P, points[i] as P) || antipodal(points[i - 1] as P, points[i] as P))
      throw queryLogic('Invalid LineString.  Are there antipodal or duplicate vertices?');
  }
  return points;
}

function closeRing(points: P[]): P[] {
  const ring = [...points];
  if (!samePoint(ring[0] as P, ring[ring.length - 1] as P)) ring.push(ring[0] as P);
  const bad = (): never => {
    throw queryLogic('Invalid LinearRing.  Are there antipodal or duplicate vertices? Is it self-intersecting?');
  };
  if (ring.length < 4) bad();
  for (let i = 1; i < ring.length; i++) if (samePoint(ring[i - 1] as P, ring[i] as P)) bad();
  const distinct = ring.slice(0, -1);
  for (let i = 0; i < distinct.length; i++)
    for (let j = i + 1; j < distinct.length; j++) if (samePoint(distinct[i] as P, distinct[j] as P)) bad();
  const n = ring.length - 1;
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) {
      if (Math.abs(i - j) <= 1 || (i === 0 && j === n - 1)) continue;
      if (segmentsIntersect(ring[i] as P, ring[i + 1] as P, ring[j] as P, ring[j + 1] as P)) bad();
    }
  return ring;
}

// ---- planar predicates on lon/lat ----

function orient(a: P, b: P, c: P): number {
  const v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
  return Math.abs(v) < 1e-15 ? 0 : Math.sign(v);
}
function onSegment(p: P, a: P, b: P): boolean {
  return (
    orient(a, b, p) === 0 &&
    Math.min(a[0], b[0]) - 1e-12 <= p[0] &&
    p[0] <= Math.max(a[0], b[0]) + 1e-12 &&
    Math.min(a[1], b[1]) - 1e-12 <= p[1] &&
    p[1] <= Math.max(a[1], b[1]) + 1e-12
  );
}
function segmentsIntersect(a: P, b: P, c: P, d: P): boolean {
  const o1 = orient(a, b, c);
  const o2 = orient(a, b, d);
  const o3 = orient(c, d, a);
  const o4 = orient(c, d, b);
  if (o1 !== o2 && o3 !== o4) return true;
  return onSegment(c, a, b) || onSegment(d, a, b) || onSegment(a, c, d) || onSegment(b, c, d);
}
/** Strictly inside a ring (not on its boundary). */
function inRing(p: P, ring: P[]): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const a = ring[i] as P;
    const b = ring[j] as P;
    if (a[1] > p[1] !== b[1] > p[1] && p[0] < ((b[0] - a[0]) * (p[1] - a[1])) / (b[1] - a[1]) + a[0]) inside = !inside;
  }
  return inside;
}
function onRing(p: P, ring: P[]): boolean {
  for (let i = 0; i + 1 < ring.length; i++) if (onSegment(p, ring[i] as P, ring[i + 1] as P)) return true;
  return false;
}
function edges(points: P[]): [P, P][] {
  const out: [P, P][] = [];
  for (let i = 0; i + 1 < points.length; i++) out.push([points[i] as P, points[i + 1] as P]);
  return out;
}

interface Shape {
  type: Geometry['type'];
  points: P[]; // a point's single vertex, a line's vertices, a polygon's outer ring
  holes: P[][];
}
function shapeOf(g: Geometry): Shape {
  if (g.type === 'Point') return { type: 'Point', points: [g.coordinates as P], holes: [] };
  if (g.type === 'LineString') return { type: 'LineString', points: g.coordinates as P[], holes: [] };
  const rings = g.coordinates as P[][];
  return { type: 'Polygon', points: rings[0] as P[], holes: rings.slice(1) };
}
/** In a polygon's area: closed, its holes open (a hole's boundary belongs to the polygon). */
function pointInPolygon(p: P, s: Shape): boolean {
  if (!(inRing(p, s.points) || onRing(p, s.points))) return false;
  return !s.holes.some((h) => inRing(p, h) && !onRing(p, h));
}
/** In a polygon's interior: not on its outer boundary, nor in or on a hole. */
function strictlyInPolygon(p: P, s: Shape): boolean {
  if (!inRing(p, s.points) || onRing(p, s.points)) return false;
  return !s.holes.some((h) => inRing(p, h) || onRing(p, h));
}

/**
 * Where the edges of `others` meet the edge x-y, as fractions of it (0 and 1 included), in
 * order: the pieces between them lie each wholly on one side of, or along, every other edge.
 */
function cutPoints(x: P, y: P, others: [P, P][]): number[] {
  const ts = [0, 1];
  const dx = y[0] - x[0];
  const dy = y[1] - x[1];
  const len2 = dx * dx + dy * dy;
  const at = (p: P): number => ((p[0] - x[0]) * dx + (p[1] - x[1]) * dy) / len2;
  for (const [u, v] of others) {
    if (onSegment(u, x, y)) ts.push(at(u));
    if (onSegment(v, x, y)) ts.push(at(v));
    const o1 = orient(x, y, u);
    const o2 = orient(x, y, v);
    const o3 = orient(u, v, x);
    const o4 = orient(u, v, y);
    if (o1 * o2 < 0 && o3 * o4 < 0) {
      const ex = v[0] - u[0];
      const ey = v[1] - u[1];
      const den = dx * ey - dy * ex;
      ts.push(((u[0] - x[0]) * ey - (u[1] - x[1]) * ex) / den);
    }
  }
  return ts.filter((t) => t >= 0 && t <= 1).sort((a, b) => a - b);
}
/** The midpoints of the pieces the edges of `others` cut x-y into. */
function pieceMidpoints(x: P, y: P, others: [P, P][]): P[] {
  const ts = cutPoints(x, y, others);
  const out: P[] = [];
  for (let i = 0; i + 1 < ts.length; i++) {
    const t = ((ts[i] as number) + (ts[i + 1] as number)) / 2;
    if ((ts[i + 1] as number) - (ts[i] as number) > 1e-12)
      out.push([x[0] + t * (y[0] - x[0]), x[1] + t * (y[1] - x[1])]);
  }
  return out;
}

/**
 * A line meets a polygon (S2Polygon::IntersectWithPolyline giving a piece): some stretch of it
 * of positive length lies in the closed polygon. Touching it at a point only is not meeting.
 */
function lineMeetsPolygon(line: Shape, poly: Shape): boolean {
  const polyEdges = shapeEdges(poly);
  return edges(line.points).some(([x, y]) => pieceMidpoints(x, y, polyEdges).some((m) => pointInPolygon(m, poly)));
}

/**
 * Two polygons meet (S2Polygon::Intersects as RethinkDB's tests pin it): their interiors
 * overlap, or their outer boundaries share a stretch of positive length. Touching at a corner,
 * or along a hole's boundary (the hole is open), is not meeting.
 */
function polygonsMeet(a: Shape, b: Shape): boolean {
  for (const [x, y] of shapeEdges(a))
    for (const [u, v] of shapeEdges(b)) {
      const o1 = orient(x, y, u);
      const o2 = orient(x, y, v);
      const o3 = orient(u, v, x);
      const o4 = orient(u, v, y);
      if (o1 * o2 < 0 && o3 * o4 < 0) return true;
    }
  const side = (s: Shape, other: Shape): boolean => {
    const otherEdges = shapeEdges(other);
    for (const [x, y] of edges(s.points))
      for (const m of pieceMidpoints(x, y, otherEdges))
        if (strictlyInPolygon(m, other) || onRing(m, other.points)) return true;
    for (const h of s.holes)
      for (const [x, y] of edges(h))
        for (const m of pieceMidpoints(x, y, otherEdges)) if (strictlyInPolygon(m, other)) return true;
    return false;
  };
  return side(a, b) || side(b, a);
}
function shapeEdges(s: Shape): [P, P][] {
  return [...edges(s.points), ...s.holes.flatMap((h) => edges(h))];
}

export function intersects(a: Shape, b: Shape): boolean {
  if (a.type === 'Point' && b.type === 'Point') return samePoint(a.points[0] as P, b.points[0] as P);
  if (a.type === 'Point' || b.type === 'Point') {
    const [pt, other] = a.type === 'Point' ? [a, b] : [b, a];
    const p = pt.points[0] as P;
    if (other.type === 'LineString') return edges(other.points).some(([x, y]) => onSegment(p, x, y));
    return pointInPolygon(p, other);
  }
  if (a.type === 'Polygon' && b.type === 'Polygon') return polygonsMeet(a, b);
  if (a.type === 'Polygon') return lineMeetsPolygon(b, a);
  if (b.type === 'Polygon') return lineMeetsPolygon(a, b);
  // Two lines: closed, so meeting at an end point is meeting.
  for (const [x, y] of shapeEdges(a))
    for (const [u, v] of shapeEdges(b)) if (segmentsIntersect(x, y, u, v)) return true;
  return false;
}

export function includes(outer: Shape, inner: Shape): boolean {
  if (outer.type !== 'Polygon') throw queryLogic(`Expected geometry of type \`Polygon\` but found \`${outer.type}\`.`);
  if (!inner.points.every((p) => pointInPolygon(p, outer))) return false;
  if (inner.type === 'Point') return true;
  // No edge of the inner shape may leave the outer area: it may not cross a hole or the boundary.
  for (const [x, y] of shapeEdges(inner)) {
    const mid: P = [(x[0] + y[0]) / 2, (x[1] + y[1]) / 2];
    if (!pointInPolygon(mid, outer)) return false;
    for (const h of outer.holes) if (h.some((p) => inner.type === 'Polygon' && inRing(p, inner.points))) return false;
    for (const [u, v] of shapeEdges(outer)) {
      const o1 = orient(x, y, u);
      const o2 = orient(x, y, v);
      const o3 = orient(u, v, x);
      const o4 = orient(u, v, y);
      if (o1 * o2 < 0 && o3 * o4 < 0) return false;
    }
  }
  return true;
}

// ---- geodesics ----

interface Ellipsoid {
  a: number;
  f: number;
}
async function ellipsoid(ev: Evaluator, node: TermNode, env: Env | null): Promise<Ellipsoid> {
  const v = await ev.optDatum(node, 'geo_system', env);
  if (v === undefined || v === 'WGS84') return { a: 6378137, f: 1 / 298.257223563 };
  if (v === 'unit_sphere') return { a: 1, f: 0 };
  if (isObject(v)) {
    const a = field(v, 'a');
    const f = field(v, 'f');
    if (typeof a === 'number' && typeof f === 'number') return { a, f };
  }
  throw queryLogic(
    `Unrecognized geo system \`${typeof v === 'string' ? v : JSON.stringify(v)}\` (valid geo systems are "WGS84" and "unit_sphere").`,
  );
}
async function unitOf(ev: Evaluator, node: TermNode, env: Env | null): Promise<number> {
  const u = (await ev.optDatum(node, 'unit', env)) ?? 'm';
  if (typeof u !== 'string') throw typeError('STRING', u);
  const f = UNITS[u];
  if (f === undefined) throw queryLogic(`Unrecognized distance unit \`${u}\`.`);
  return f;
}
const GEODESICS = new Map<string, KarneyGeodesic>();
function geod(e: Ellipsoid): KarneyGeodesic {
  const key = `${e.a}/${e.f}`;
  let g = GEODESICS.get(key);
  if (g === undefined) {
    g = new KarneyGeodesic(e.a, e.f);
    if (GEODESICS.size < 16) GEODESICS.set(key, g);
  }
  return g;
}

/**
 * A position as RethinkDB's distance reads it: through S2's unit vector and back (S2LatLng's
 * ToPoint, Latitude and Longitude), which moves the last bits of its coordinates.
 */
function viaS2(p: P): P {
  return fromS2(toV(p));
}
function fromS2(v: V3): P {
  return [
    Math.atan2(v[1], v[0]) * (180 / Math.PI),
    Math.atan2(v[2], Math.sqrt(v[0] * v[0] + v[1] * v[1])) * (180 / Math.PI),
  ];
}
function pointDistance(a: P, b: P, e: Ellipsoid): number {
  return geod(e).distance(a[1], a[0], b[1], b[0]);
}

type V3 = [number, number, number];
/** S2LatLng::ToPoint: a position as a unit vector (longitude 180 read as -180). */
const toV = (p: P): V3 => {
  const phi = p[1] * (Math.PI / 180);
  const theta = (p[0] === 180 ? -180 : p[0]) * (Math.PI / 180);
  const cosphi = Math.cos(phi);
  return [Math.cos(theta) * cosphi, Math.sin(theta) * cosphi, Math.sin(phi)];
};
const dot = (a: V3, b: V3): number => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
const cross = (a: V3, b: V3): V3 => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const sub = (a: V3, b: V3): V3 => [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
const add = (a: V3, b: V3): V3 => [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
const simpleCcw = (a: V3, b: V3, c: V3): boolean => dot(cross(c, a), b) > 0;

/**
 * The closest point to x on the great-circle edge a-b, computed as S2EdgeUtil::GetClosestPoint
 * does (with S2's robust cross product), so distances to lines and polygons match RethinkDB's.
 */
function closestOnEdge(x: V3, a: V3, b: V3): V3 {
  const n = cross(add(b, a), sub(b, a));
  const nn = dot(n, n);
  if (nn !== 0) {
    const t = dot(x, n) / nn;
    const q: V3 = [x[0] - t * n[0], x[1] - t * n[1], x[2] - t * n[2]];
    if (simpleCcw(n, a, q) && simpleCcw(q, b, n)) {
      const inv = 1 / Math.sqrt(dot(q, q));
      return [q[0] * inv, q[1] * inv, q[2] * inv];
    }
  }
  const da = sub(x, a);
  const db = sub(x, b);
  return dot(da, da) <= dot(db, db) ? a : b;
}
/** The angle between unit vectors (S2Point::Angle). */
const angle = (a: V3, b: V3): number => Math.atan2(Math.sqrt(dot(cross(a, b), cross(a, b))), dot(a, b));

/** RethinkDB's geodesic_distance from a point to a shape: via S2's projection onto it. */
function distanceTo(p: P, s: Shape, e: Ellipsoid): number {
  if (s.type === 'Point') return pointDistance(viaS2(p), viaS2(s.points[0] as P), e);
  if (s.type === 'Polygon' && pointInPolygon(p, s)) return 0;
  const x = toV(p);
  let best: V3 | null = null;
  let bestAngle = Number.POSITIVE_INFINITY;
  for (const [a, b] of shapeEdges(s)) {
    const q = closestOnEdge(x, toV(a), toV(b));
    const d = angle(x, q);
    if (d < bestAngle) {
      bestAngle = d;
      best = q;
    }
  }
  if (best === null || (best[0] === x[0] && best[1] === x[1] && best[2] === x[2])) return 0;
  return pointDistance(fromS2(x), fromS2(best), e);
}

function circle(center: P, radius: number, n: number, e: Ellipsoid): P[] {
  if (radius <= 0) throw queryLogic('Radius must be positive');
  const b = e.a * (1 - e.f);
  const max = 0.5 * Math.PI * Math.min(e.a, b);
  if (radius >= max)
    throw queryLogic(
      `Radius must be smaller than a quarter of the circumference along the minor axis of the reference ellipsoid.  Got ${reconstructableDouble(radius)}m, but must be smaller than ${reconstructableDouble(max)}m.`,
    );
  const g = geod(e);
  const out: P[] = [];
  for (let i = 0; i < n; i++) {
    const [lat, lon] = g.destination(center[1], center[0], -180 + (360 / n) * i, radius);
    out.push([lon, lat]);
  }
  if (n > 0) out.push(out[0] as P);
  return out;
}

async function geoArg(ev: Evaluator, n: Node, env: Env | null): Promise<Shape> {
  return shapeOf(asGeometry(await ev.evalDatum(n, env)));
}

/** The input's `crs` field (kept as given, null included). */
function withCrs(g: DatumObject, input: DatumObject): DatumObject {
  const crs = field(input, 'crs');
  if (crs !== undefined) g.crs = crs;
  return g;
}

/** A GeoJSON object checked and made a GEOMETRY (geojson.cc). */
function fromGeoJson(v: Datum): DatumObject {
  if (!isObject(v)) throw typeError('OBJECT', v);
  const type = field(v, 'type');
  const coords = field(v, 'coordinates');
  if (type === undefined) throw nonExistence(`No attribute \`type\` in object:\n${pretty(v)}`);
  if (coords === undefined) throw nonExistence(`No attribute \`coordinates\` in object:\n${pretty(v)}`);
  for (const k of Object.keys(v))
    if (k !== 'type' && k !== 'coordinates' && k !== 'bbox' && k !== 'crs' && k !== '$reql_type$')
      throw queryLogic(`Unrecognized field \`${k}\` found in geometry object.`);
  const crs = field(v, 'crs');
  if (crs !== undefined && crs !== null) {
    const name = isObject(crs) ? field(field(crs, 'properties') as DatumObject, 'name') : undefined;
    if (name !== 'urn:ogc:def:crs:OGC:1.3:CRS84' && name !== 'EPSG:4326')
      throw queryLogic(`Unrecognized coordinate reference system \`${JSON.stringify(name)}\`.`);
  }
  switch (type) {
    case 'Point':
      if (!Array.isArray(coords)) throw typeError('ARRAY', coords);
      return withCrs(geometry('Point', pointOf(coords)), v);
    case 'LineString': {
      if (!Array.isArray(coords)) throw typeError('ARRAY', coords);
      const pts = coords.map(pointOf);
      if (pts.length < 2) throw queryLogic(`GeoJSON LineString must have at least two positions.`);
      return withCrs(geometry('LineString', checkLine(pts)), v);
    }
    case 'Polygon': {
      if (!Array.isArray(coords)) throw typeError('ARRAY', coords);
      const rings = coords.map((r) => {
        if (!Array.isArray(r)) throw typeError('ARRAY', r);
        return closeRing(r.map(pointOf));
      });
      return withCrs(geometry('Polygon', rings), v);
    }
    default:
      if (['MultiPoint', 'MultiLineString', 'MultiPolygon', 'GeometryCollection'].includes(String(type)))
        throw queryLogic(`GeoJSON type \`${String(type)}\` is not supported.`);
      throw queryLogic(`Unrecognized GeoJSON type \`${String(type)}\`.`);
  }
}

const geoPredicate = (op: (a: Shape, b: Shape) => boolean): TermDef => ({
  min: 2,
  max: 2,
  eval: async (ev, node, env) => {
    const first = await ev.eval(node.args[0] as Node, env);
    const b = await geoArg(ev, node.args[1] as Node, env);
    if (first instanceof Seq || first instanceof TableRef || Array.isArray(first)) {
      return ev.mapSeq(ev.seq(first), async (row) => (op(shapeOf(asGeometry(row)), b) ? row : undefined), true);
    }
    return op(shapeOf(asGeometry(await ev.datum(first))), b);
  },
});

export const geoTerms: TermFamily = {
  [T.POINT]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) =>
      geometry(
        'Point',
        checkPoint(await ev.number(node.args[0] as Node, env), await ev.number(node.args[1] as Node, env)),
      ),
  },
  [T.LINE]: {
    min: 2,
    max: INF,
    eval: async (ev, node, env) => {
      const pts: P[] = [];
      for (const n of node.args) pts.push(pointOf(await ev.evalDatum(n, env)));
      return geometry('LineString', checkLine(pts));
    },
  },
  [T.POLYGON]: {
    min: 3,
    max: INF,
    eval: async (ev, node, env) => {
      const pts: P[] = [];
      for (const n of node.args) pts.push(pointOf(await ev.evalDatum(n, env)));
      return geometry('Polygon', [closeRing(pts)]);
    },
  },
  [T.CIRCLE]: {
    min: 2,
    max: 2,
    optargs: ['num_vertices', 'geo_system', 'unit', 'fill'],
    eval: async (ev, node, env) => {
      const center = pointOf(await ev.evalDatum(node.args[0] as Node, env));
      const radius = (await ev.number(node.args[1] as Node, env)) * (await unitOf(ev, node, env));
      const n = (await ev.optDatum(node, 'num_vertices', env)) ?? 32;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 3)
        throw queryLogic('`num_vertices` must be at least 3.');
      const fill = (await ev.optDatum(node, 'fill', env)) ?? true;
      const ring = circle(center, radius, n, await ellipsoid(ev, node, env));
      return fill ? geometry('Polygon', [ring]) : geometry('LineString', ring);
    },
  },
  [T.GEOJSON]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => fromGeoJson(await ev.evalDatum(node.args[0] as Node, env)),
  },
  [T.TO_GEOJSON]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const v = await ev.evalDatum(node.args[0] as Node, env);
      asGeometry(v);
      const out: DatumObject = {};
      for (const [k, x] of Object.entries(v as DatumObject)) if (k !== '$reql_type$') out[k] = x;
      return out;
    },
  },
  [T.DISTANCE]: {
    min: 2,
    max: 2,
    optargs: ['geo_system', 'unit'],
    eval: async (ev, node, env) => {
      const a = await geoArg(ev, node.args[0] as Node, env);
      const b = await geoArg(ev, node.args[1] as Node, env);
      const e = await ellipsoid(ev, node, env);
      const unit = await unitOf(ev, node, env);
      let d: number;
      if (a.type === 'Point') d = distanceTo(a.points[0] as P, b, e);
      else if (b.type === 'Point') d = distanceTo(b.points[0] as P, a, e);
      else throw queryLogic('Distance can only be computed if at least one of the arguments is a point.');
      return d / unit;
    },
  },
  [T.INTERSECTS]: geoPredicate(intersects),
  [T.INCLUDES]: geoPredicate(includes),
  [T.FILL]: {
    min: 1,
    max: 1,
    eval: async (ev, node, env) => {
      const g = asGeometry(await ev.evalDatum(node.args[0] as Node, env));
      if (g.type === 'Polygon') return geometry('Polygon', g.coordinates);
      if (g.type !== 'LineString') throw queryLogic(`Expected a LineString or Polygon, but found a ${g.type}.`);
      return geometry('Polygon', [closeRing(g.coordinates as P[])]);
    },
  },
  [T.POLYGON_SUB]: {
    min: 2,
    max: 2,
    eval: async (ev, node, env) => {
      const outerG = asGeometry(await ev.evalDatum(node.args[0] as Node, env));
      const innerG = asGeometry(await ev.evalDatum(node.args[1] as Node, env));
      if (outerG.type !== 'Polygon') throw queryLogic(`Expected a Polygon but found a ${outerG.type}.`);
      if (innerG.type !== 'Polygon') throw queryLogic(`Expected a Polygon but found a ${innerG.type}.`);
      const inner = shapeOf(innerG);
      if (inner.holes.length > 0) throw queryLogic('Expected a Polygon with only an outer shell.  This one has holes.');
      if (!includes(shapeOf(outerG), inner))
        throw queryLogic('The second argument to `polygon_sub` is not contained in the first one.');
      return geometry('Polygon', [...(outerG.coordinates as Datum[]), inner.points]);
    },
  },
  [T.GET_INTERSECTING]: {
    min: 2,
    max: 2,
    optargs: ['index'],
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      const g = await geoArg(ev, node.args[1] as Node, env);
      const index = await ev.optDatum(node, 'index', env);
      if (index === undefined) throw queryLogic('get_intersecting requires an index argument.');
      if (typeof index !== 'string') throw typeError('STRING', index);
      if (index === t.primaryKey) throw queryLogic('get_intersecting cannot use the primary index.');
      const src = await ev.indexSource(t, index, true);
      if (src.kind !== 'function' || !src.def.geo)
        throw queryLogic(
          `Index \`${index}\` is not a geospatial index.  get_intersecting can only be used with a geospatial index.`,
        );
      // A row is given once per index entry that intersects (a multi index may have several).
      const rows: Datum[] = [];
      for (const e of await ev.indexEntries(t, src)) {
        let hit = false;
        try {
          hit = intersects(shapeOf(asGeometry(e.value)), g);
        } catch {
          hit = false;
        }
        if (hit) rows.push(e.row);
      }
      return Seq.fromStream(async function* () {
        yield* rows;
      }, t);
    },
  },
  [T.GET_NEAREST]: {
    min: 2,
    max: 2,
    optargs: ['index', 'max_results', 'max_dist', 'geo_system', 'unit'],
    eval: async (ev, node, env) => {
      const t = await ev.eval(node.args[0] as Node, env);
      if (!(t instanceof TableRef)) expectType(t, 'TABLE');
      const center = pointOf(await ev.evalDatum(node.args[1] as Node, env));
      const index = await ev.optDatum(node, 'index', env);
      if (index === undefined) throw queryLogic('get_nearest requires an index argument.');
      if (typeof index !== 'string') throw typeError('STRING', index);
      if (index === t.primaryKey) throw queryLogic('get_nearest cannot use the primary index.');
      const e = await ellipsoid(ev, node, env);
      const unit = await unitOf(ev, node, env);
      const maxResults = (await ev.optDatum(node, 'max_results', env)) ?? 100;
      if (typeof maxResults !== 'number' || maxResults <= 0) throw queryLogic('max_results must be positive.');
      const maxDist = ((await ev.optDatum(node, 'max_dist', env)) ?? 100000 / unit) as number;
      if (typeof maxDist !== 'number' || maxDist <= 0) throw queryLogic('max_dist must be positive.');
      const src = await ev.indexSource(t, index, true);
      if (src.kind !== 'function' || !src.def.geo)
        throw queryLogic(
          `Index \`${index}\` is not a geospatial index.  get_nearest can only be used with a geospatial index.`,
        );
      const found: { dist: number; doc: Datum }[] = [];
      for (const entry of await ev.indexEntries(t, src)) {
        let d: number;
        try {
          d = distanceTo(center, shapeOf(asGeometry(entry.value)), e) / unit;
        } catch {
          continue;
        }
        if (d > maxDist) continue;
        const prev = found.find((f) => datumsEqual(f.doc, entry.row));
        if (prev) prev.dist = Math.min(prev.dist, d);
        else found.push({ dist: d, doc: entry.row });
      }
      found.sort((x, y) => x.dist - y.dist);
      return found.slice(0, maxResults).map((f) => ({ dist: f.dist, doc: f.doc }));
    },
  },
};
