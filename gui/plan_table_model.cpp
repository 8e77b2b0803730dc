#include "gui/plan_table_model.h"

#include <algorithm>

namespace dayzero::gui {

namespace {

QString num(double v, int decimals) { return QString::number(v, 'f', decimals); }

}  // namespace

PlanTableModel::PlanTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PlanTableModel::setResult(std::shared_ptr<const search::SearchResult> result) {
  beginResetModel();
  result_ = std::move(result);
  layouts_.clear();
  on_front_.clear();
  if (result_) {
    layouts_.reserve(static_cast<qsizetype>(result_->all.size()));
    for (const auto& e : result_->all) layouts_.push_back(QString::fromStdString(search::layout_name(e)));
    on_front_.assign(result_->all.size(), 0);
    for (size_t i : result_->pareto) on_front_[i] = 1;
  }
  endResetModel();
}

int PlanTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !result_) return 0;
  return static_cast<int>(result_->all.size());
}

int PlanTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant PlanTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !result_) return {};
  const size_t i = static_cast<size_t>(index.row());
  const auto& e = result_->all[i];
  const auto& d = e.prediction;
  if (role == PlanIndexRole) return QVariant::fromValue<qulonglong>(i);
  if (role == FeasibleRole) return e.meets_sla;
  const bool timed = d.fits;
  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    switch (static_cast<Column>(index.column())) {  // checkIndex: a valid column
      case Index: return sort ? QVariant(static_cast<qulonglong>(i)) : QVariant(QString::number(i));
      case Devices: return static_cast<qlonglong>(e.plan.devices_used());
      case Layout: return layouts_[index.row()];
      case Weights: return QString::fromStdString(std::string(search::weight_choice_name(e.weights)));
      case KvCache: return QString::fromStdString(std::string(plan::kv_dtype_name(e.plan.dtypes.kv_cache)));
      case Batch: return static_cast<qlonglong>(e.plan.workload.batch);
      case MemGB: {
        const double gb = static_cast<double>(e.max_memory_bytes) / 1e9;
        return sort ? QVariant(gb) : QVariant(num(gb, 1));
      }
      case TtftS:
        if (!timed) return {};
        return sort ? QVariant(d.ttft_s) : QVariant(num(d.ttft_s, 3));
      case TpotMs:
        if (!timed) return {};
        return sort ? QVariant(d.tpot_s * 1e3) : QVariant(num(d.tpot_s * 1e3, 1));
      case TokS:
        if (!timed) return {};
        return sort ? QVariant(d.throughput_tokens_per_s) : QVariant(num(d.throughput_tokens_per_s, 0));
      case TokSDev:
        if (!timed) return {};
        return sort ? QVariant(d.throughput_tokens_per_s_per_device)
                    : QVariant(num(d.throughput_tokens_per_s_per_device, 1));
      case Fits: return sort ? QVariant(d.fits ? 1 : 0) : QVariant(d.fits ? tr("yes") : tr("no"));
      case MeetsSla: return sort ? QVariant(e.meets_sla ? 1 : 0) : QVariant(e.meets_sla ? tr("yes") : tr("no"));
      case Pareto: return sort ? QVariant(on_front_[i] ? 1 : 0) : QVariant(on_front_[i] ? tr("front") : QString());
      case ColumnCount: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    const int c = index.column();
    if (c == Layout || c == Weights || c == KvCache) return QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::ToolTipRole) {
    QString tip = layouts_[index.row()];
    if (!d.fits) tip += tr("\ndoes not fit in device memory");
    else if (!e.meets_sla) tip += tr("\nmisses the SLA: %1").arg(QString::fromStdString(e.sla_miss));
    return tip;
  }
  return {};
}

QVariant PlanTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  static const char* const names[ColumnCount] = {"#",         "devices", "layout",    "weights", "KV",
                                                 "batch",     "mem GB",  "TTFT s",    "TPOT ms", "tok/s",
                                                 "tok/s/dev", "fits",    "meets SLA", "Pareto"};
  if (section < 0 || section >= ColumnCount) return {};
  return tr(names[section]);
}

PlanFilterProxy::PlanFilterProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(PlanTableModel::SortRole);
  setFilterKeyColumn(PlanTableModel::Layout);
  setFilterCaseSensitivity(Qt::CaseInsensitive);
}

void PlanFilterProxy::setFeasibleOnly(bool on) {
  if (on == feasible_only_) return;
  feasible_only_ = on;
  invalidateRowsFilter();
}

bool PlanFilterProxy::filterAcceptsRow(int source_row, const QModelIndex& source_parent) const {
  if (feasible_only_ && !sourceModel()->index(source_row, 0, source_parent).data(PlanTableModel::FeasibleRole).toBool())
    return false;
  return QSortFilterProxyModel::filterAcceptsRow(source_row, source_parent);
}

bool PlanFilterProxy::lessThan(const QModelIndex& left, const QModelIndex& right) const {
  const QVariant l = left.data(sortRole()), r = right.data(sortRole());
  if (!l.isValid() || !r.isValid()) {  // plans without a time sort last in either order
    const bool l_first = l.isValid() && !r.isValid();
    return sortOrder() == Qt::AscendingOrder ? l_first : (!l.isValid() && r.isValid());
  }
  if (l.typeId() == QMetaType::QString) return l.toString() < r.toString();
  return l.toDouble() < r.toDouble();
}

QString table_to_csv(const QAbstractItemModel& model) {
  auto field = [](QString s) {
    if (s.contains(',') || s.contains('"') || s.contains('\n')) s = '"' + s.replace('"', "\"\"") + '"';
    return s;
  };
  QString out;
  for (int c = 0; c < model.columnCount(); ++c)
    out += (c ? "," : "") + field(model.headerData(c, Qt::Horizontal).toString());
  out += '\n';
  for (int r = 0; r < model.rowCount(); ++r) {
    for (int c = 0; c < model.columnCount(); ++c) out += (c ? "," : "") + field(model.index(r, c).data().toString());
    out += '\n';
  }
  return out;
}

}  // namespace dayzero::gui
