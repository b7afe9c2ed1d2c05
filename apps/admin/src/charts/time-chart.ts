/**
 * A uPlot time-series chart as a Preact component. x values are seconds since the epoch; each
 * series is one y array. The chart follows its container's width (ResizeObserver), so it works
 * in a narrow window. Data updates call setData; a change in series rebuilds the chart.
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';
import { formatNumber } from '../format.ts';

export interface SeriesSpec {
  label: string;
  color: string;
  /** Which y scale: 'y' (left axis) or 'y2' (right axis). */
  scale?: 'y' | 'y2';
  /** Format of the value in the legend. */
  format?: (v: number) => string;
}

export interface TimeChartProps {
  /** Used as data-testid and aria-label. */
  id: string;
  title: string;
  series: SeriesSpec[];
  /** [xs, ...ys]; null where a value is unknown. */
  data: [number[], ...(number | null)[][]];
  height?: number;
  /** Axis labels. */
  yLabel?: string;
  y2Label?: string;
  /** Axis tick formats (default: formatNumber). */
  yFormat?: (v: number) => string;
  y2Format?: (v: number) => string;
  /** x is seconds since the epoch (default) or plain seconds (e.g. since an import started). */
  xTime?: boolean;
  xLabel?: string;
}

export function TimeChart(props: TimeChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const key = props.series.map((s) => `${s.label}/${s.scale ?? 'y'}`).join('|');

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const hasY2 = props.series.some((s) => s.scale === 'y2');
    const opts: uPlot.Options = {
      width: Math.max(200, el.clientWidth),
      height: props.height ?? 200,
      legend: { show: true, live: true },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: props.xTime ?? true },
        y: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
        ...(hasY2 ? { y2: { range: (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] } } : {}),
      },
      axes: [
        { stroke: '#8a94a6', grid: { stroke: '#eef0f4' }, ...(props.xLabel ? { label: props.xLabel } : {}) },
        {
          stroke: '#8a94a6',
          grid: { stroke: '#eef0f4' },
          label: props.yLabel,
          size: props.yFormat ? 76 : 60,
          values: (_u, ticks) => ticks.map(props.yFormat ?? formatNumber),
        },
        ...(hasY2
          ? [
              {
                scale: 'y2',
                side: 1,
                stroke: '#8a94a6',
                grid: { show: false },
                label: props.y2Label,
                size: props.y2Format ? 76 : 60,
                values: (_u, ticks) => ticks.map(props.y2Format ?? formatNumber),
              } as uPlot.Axis,
            ]
          : []),
      ],
      series: [
        props.xTime === false
          ? { label: 'at', value: (_u: uPlot, v: number | null) => (v == null ? '–' : `${v.toFixed(1)} s`) }
          : {},
        ...props.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 2,
          scale: s.scale ?? 'y',
          spanGaps: false,
          value: (_u: uPlot, v: number | null) => (v == null ? '–' : s.format ? s.format(v) : formatNumber(v)),
        })),
      ],
    };
    const u = new uPlot(opts, padded(props.data, props.xTime ?? true), el);
    plot.current = u;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (w !== u.width) u.setSize({ width: w, height: props.height ?? 200 });
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [key]);

  useEffect(() => {
    plot.current?.setData(padded(props.data, props.xTime ?? true));
  }, [props.data]);

  return html`<figure class="chart" data-testid=${props.id} data-points=${props.data[0].length} aria-label=${props.title}>
    <figcaption>${props.title}</figcaption>
    <div class="chart-box" ref=${box}></div>
  </figure>`;
}

/**
 * uPlot spreads the x axis over years when there is a single point (or none): give it an empty
 * span of a minute (time axes) or a second ending at the point instead.
 */
function padded(data: TimeChartProps['data'], time: boolean): uPlot.AlignedData {
  const xs = data[0];
  if (xs.length >= 2) return data as uPlot.AlignedData;
  const end = xs.length === 1 ? (xs[0] as number) : time ? Date.now() / 1000 : 1;
  const span = time ? 60 : 1;
  return [
    [end - span, end],
    ...data.slice(1).map((ys) => [null, ys.length ? (ys[0] ?? null) : null]),
  ] as uPlot.AlignedData;
}
