// One colour per allocation type, shared by the summary, the bars, the card and the lifetime bar.
export const TYPE_COLORS = {
  parameter: "#4e79a7",
  output: "#59a14f",
  temporary: "#f28e2b",
  constant: "#b07aa1",
  "thread-local": "#76b7b2",
  mixed: "#9d9d9d",
};

export function typeColor(type) {
  return TYPE_COLORS[type] ?? TYPE_COLORS.mixed;
}
