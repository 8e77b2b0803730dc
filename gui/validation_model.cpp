#include "gui/validation_model.h"

#include <cmath>

namespace dayzero::gui {

namespace {

QString shape_text(const std::vector<int64_t>& s) {
  QStringList parts;
  for (int64_t v : s) parts << QString::number(v);
  return "[" + parts.join(", ") + "]";
}

QString error_text(double pct) {
  if (!std::isfinite(pct)) return QStringLiteral("-");
  if (std::abs(pct) < 0.05) return QStringLiteral("0.0");  // no "-0.0"
  return (pct > 0 ? "+" : "") + QString::number(pct, 'f', 1);
}

}  // namespace

ValidationTableModel::ValidationTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void ValidationTableModel::setReport(std::shared_ptr<const simulate::ValidationReport> report) {
  beginResetModel();
  report_ = std::move(report);
  endResetModel();
}

int ValidationTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !report_) return 0;
  return static_cast<int>(report_->ops.size());
}

int ValidationTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant ValidationTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !report_) return {};
  const auto& o = report_->ops[static_cast<size_t>(index.row())];
  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    switch (static_cast<Column>(index.column())) {  // checkIndex: a valid column
      case Rank: return o.rank;
      case Phase: return QString::fromStdString(o.phase);
      case Op: return QString::fromStdString(o.name);
      case Kind: return QString::fromStdString(o.kind);
      case Shape:
        return sort ? QVariant(static_cast<qlonglong>(o.shape.empty() ? 0 : o.shape[0]))
                    : QVariant(shape_text(o.shape));
      case Calls: return static_cast<qlonglong>(o.calls);
      case Bound: return QString::fromStdString(o.bound);
      case MeasuredUs:
        return sort ? QVariant(o.measured_s * 1e6) : QVariant(QString::number(o.measured_s * 1e6, 'f', 3));
      case PredictedUs:
        return sort ? QVariant(o.predicted_s * 1e6) : QVariant(QString::number(o.predicted_s * 1e6, 'f', 3));
      case ErrorPct: return sort ? QVariant(o.error_pct) : QVariant(error_text(o.error_pct));
      case ColumnCount: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    const int c = index.column();
    if (c == Phase || c == Op || c == Kind || c == Shape || c == Bound)
      return QVariant(Qt::AlignLeft | Qt::AlignVCenter);
    return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  }
  if (role == Qt::ToolTipRole)
    return tr("%1 %2 (%3:%4) on rank %5: %6 calls; min over the timed iterations, one call")
        .arg(QString::fromStdString(o.phase), QString::fromStdString(o.name), QString::fromStdString(o.kind),
             QString::fromStdString(o.variant))
        .arg(o.rank)
        .arg(o.calls);
  return {};
}

QVariant ValidationTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole || section < 0 || section >= ColumnCount)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (static_cast<Column>(section)) {
    case Rank: return tr("rank");
    case Phase: return tr("phase");
    case Op: return tr("op");
    case Kind: return tr("kind");
    case Shape: return tr("shape");
    case Calls: return tr("calls");
    case Bound: return tr("bound");
    case MeasuredUs: return tr("measured us");
    case PredictedUs: return tr("predicted us");
    case ErrorPct: return tr("error %");
    case ColumnCount: break;
  }
  return {};
}

ValidationSortProxy::ValidationSortProxy(QObject* parent) : QSortFilterProxyModel(parent) {
  setSortRole(ValidationTableModel::SortRole);
}

}  // namespace dayzero::gui
